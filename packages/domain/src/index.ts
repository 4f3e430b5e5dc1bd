/**
 * The domain core: per aggregate, its state, the pure deciders and the rules they share (the sending
 * window, templates, opt-out keywords and revocations in words, the AI's prompt). No I/O: every input (state, clock, ids) is
 * given, so every rule is tested with plain values.
 */
export * from './errors';
export * from './metadata';
export * from './phone';
export * from './wall-clock';
export * from './account/decide';
export * from './account/slug';
export * from './account/erase';
export * from './lead/state';
export * from './lead/decide';
export * from './lead/erase';
export * from './lead/evolve';
export * from './lead/checklist';
export * from './consent/decide';
export * from './requirement/decide';
export * from './webhook/decide';
export * from './sequence/definition';
export * from './sequence/decide';
export * from './sequence/enrollment';
export * from './sequence/evolve';
export * from './sequence/sending-window';
export * from './sequence/templates';
export * from './conversation/decide';
export * from './conversation/revocation';
export * from './conversation/evolve';
export * from './conversation/ai-turn';
export * from './conversation/prompt';
export * from './conversation/turn';
export * from './document/context-pages';
export * from './registration/state';
export * from './registration/submit';
export * from './registration/plan';
export * from './registration/outcome';
export * from './registration/schedule';
export * from './registration/sending-rule';
export * from './registration/campaign';
