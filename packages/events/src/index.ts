export * from './catalog';
export * from './codec';
export * from './envelope';
export * from './lead-name';
export * from './text';
export * from './topics';
export * from './webhook-events';
export * from './personal-data';
