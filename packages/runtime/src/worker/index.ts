export * from './fairness';
export * from './lease';
export * from './retry';
export * from './work-queue';
export * from './worker';
