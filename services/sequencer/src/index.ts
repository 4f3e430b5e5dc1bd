export { startSequencer, type RunningSequencer, type SequencerDeps } from './sequencer';
export { claimDueSteps, releaseLeases, type DueStep } from './claims';
export { sequencerConfigSchema, type SequencerConfig } from './config';
