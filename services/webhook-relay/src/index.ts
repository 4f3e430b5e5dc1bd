export * from './config';
export * from './dispatcher';
export * from './http-client';
export * from './mapping';
export * from './relay';
export * from './schedule';
export * from './signing';
export * from './ssrf';
