export * from './environment';
export type * from './infrastructure';
export * from './fake-twilio';
export * from './clock';
export * from './openapi-responses';
export * from './fake-openai';
export * from './documents';
export * from './private-kafka';
export * from './kafka-proxy';
