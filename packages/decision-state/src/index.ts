/**
 * Loads what each decider reads from the read models: the state a command decides against, inside its
 * transaction (under its stream's lock, once the read models have caught up with the log).
 */
export * from './consent';
export * from './conversation';
export * from './sequence';
export * from './prompt';
export * from './registration';
export * from './ai-turn';
