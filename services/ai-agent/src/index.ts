export * from './agent';
export * from './config';
export * from './decide';
export * from './model';
export * from './offline';
export * from './tools';
export * from './turn';
export * from './validate';
