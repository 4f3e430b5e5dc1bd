export * from './environment';
export type * from './infrastructure';
