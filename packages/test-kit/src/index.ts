export * from './environment';
export type * from './infrastructure';
export * from './fake-twilio';
export * from './clock';
export * from './fake-openai';
