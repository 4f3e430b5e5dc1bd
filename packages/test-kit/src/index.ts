export * from './environment';
export type * from './infrastructure';
export * from './clock';
