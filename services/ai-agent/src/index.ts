export * from './agent';
export * from './config';
export * from './model';
export * from './offline';
export * from './tools';
export * from './turn';
export * from './validate';
export * from './context-refresh';
