export { startInboundDecider, type InboundDeciderDeps, type RunningInboundDecider } from './decider';
export { decideInboundBatch, decideInboundSms, INBOUND_BATCH_MAX, type InboundOutcome } from './decide-batch';
