export * from './config';
export * from './local-number-pool';
export * from './local-sender';
export * from './port';
export * from './status';
export * from './twilio';
