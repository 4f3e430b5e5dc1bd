import type { Int64, Timestamp } from './columns';

/**
 * parked: could not be applied (the error says why); held: waits behind a parked record of the same
 * stream; applied: retried with success; skipped: an operator chose to never apply it.
 */
export type ParkedStatus = 'parked' | 'held' | 'applied' | 'skipped';

export interface ParkedRecordRow {
  consumer: string;
  topic: string;
  partition: number;
  offset: Int64;
  /** The record's key: the account id (partner id on the partner topic). */
  stream_key: string | null;
  event_type: string | null;
  /** The record as it is on the log, to apply it on retry without reading Kafka. */
  value: Buffer | null;
  error: string | null;
  status: ParkedStatus;
  parked_at: Timestamp;
  updated_at: Timestamp;
  retry_requested_at: Timestamp | null;
}
