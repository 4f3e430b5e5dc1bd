import type { DomainEvent } from '@leadline/events';

/**
 * What the log consumer, parking and metrics share about the records a consumer reads and where it
 * keeps its place: plain types and names, so none of those modules imports another for them.
 */

export interface PositionedEvent {
  offset: string;
  /**
   * Undefined for a record that is not applied: a type this version does not know (written by a
   * newer producer), or a record parked or held back (see parking.ts).
   */
  event: DomainEvent | undefined;
  /** The record's key (the account id; the partner id on the partner topic), when known. */
  key?: string | null;
  /** The record as read from the log, kept with it if it has to be parked. */
  value?: Buffer | null;
  /** Why the record cannot be applied: it is parked instead (in the handler's transaction). */
  failure?: string;
  /** A parked or held record applied again by a retry, below the checkpoint. */
  replayed?: boolean;
  /**
   * On a fetched batch's first record: the offset the fetch started at. Kafka answers a fetch from that
   * offset, so the offsets between it and this record hold no record to apply (transaction markers,
   * records compacted away): their absence is not a gap.
   */
  fetchedFrom?: string;
}

/** Tables of per-partition checkpoints, one per consumer that keeps its own (same shape). */
export type CheckpointTable =
  | 'projection_checkpoints'
  | 'webhook_relay_checkpoints'
  | 'ai_agent_checkpoints'
  | 'inbound_decider_checkpoints'
  | 'sequencer_checkpoints'
  | 'sms_gateway_checkpoints';

/**
 * Each consumer's name, by its checkpoint table: the `consumer` of its parked records (so holds,
 * retries and skips of one never touch another's) and of its lag metric.
 */
export const checkpointConsumers: Record<CheckpointTable, string> = {
  projection_checkpoints: 'projector',
  webhook_relay_checkpoints: 'webhook_relay',
  ai_agent_checkpoints: 'ai_agent',
  inbound_decider_checkpoints: 'inbound_decider',
  sequencer_checkpoints: 'sequencer',
  sms_gateway_checkpoints: 'sms_gateway',
};
