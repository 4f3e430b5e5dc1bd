export * from './apply-batch';
export * from './projection';
export * from './projections';
export * from './projector';
export * from './rebuild';
