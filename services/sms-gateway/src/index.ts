export * from './config';
export * from './gateway';
export * from './outbox';
