export * from './config';
export * from './gateway';
export * from './outbox';
export * from './pass';
export * from './send-policy';
export * from './outbox-queue';
export * from './reconcile';
