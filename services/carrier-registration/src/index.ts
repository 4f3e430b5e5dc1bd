export * from './carry';
export * from './config';
export * from './queue';
export * from './redact';
export * from './worker';
