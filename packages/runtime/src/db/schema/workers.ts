import type { Generated } from 'kysely';
import type { Int64, Json, Timestamp } from './columns';
import type { ParkedRecordRow } from './parked';

/**
 * The workers' own state (in `public`): where each consumer is on the log, the records it parked, and
 * the queues of the sequencer, the AI agent and the carrier registration worker.
 */
export interface WorkerTables {
  sequencer_leases: { enrollment_id: string; step_order: number; lease_until: Timestamp };
  ai_agent_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  inbound_decider_checkpoints: {
    topic: string;
    partition: number;
    next_offset: Int64;
    updated_at: Timestamp;
  };
  /** Where the sequencer is on the account topic (see the 0013_sequencer_checkpoints migration). */
  sequencer_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  /** Where the SMS gateway is on the account topic (see the 0014_sms_gateway_checkpoints migration). */
  sms_gateway_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  /** The AI agent's work queue (see the 0008_ai_agent migration). */
  ai_pending_turns: {
    id: string;
    kind: 'inbound' | 'step';
    account_id: string;
    partner_id: string;
    phone: string;
    due_at: Timestamp;
    lease_until: Timestamp | null;
    attempts: Generated<number>;
    first_failure_at: Timestamp | null;
    step: Json<{
      enrollment_id: string;
      sequence_id: string;
      step_order: number;
      instructions: string;
    }> | null;
    causation_id: string | null;
    correlation_id: string | null;
  };
  ai_pending_messages: {
    message_id: string;
    turn_id: string;
    account_id: string;
    phone: string;
    body: string;
    media: Json<{ url: string; content_type: string | null }[]>;
    received_at: Timestamp;
    /** The message's place on the account topic: its partition and the offset just after it. */
    log_partition: number | null;
    log_next_offset: Int64 | null;
  };
  webhook_relay_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  /** The relay's and the SMS gateway's parked and held records. */
  parked_records: ParkedRecordRow;
  /** Parked records an operator skipped: every consumer of that name, a rebuild included, skips them. */
  skipped_records: {
    consumer: string;
    topic: string;
    partition: number;
    offset: Int64;
    reason: string;
    skipped_at: Timestamp;
  };
  /** The registration worker's queue: one row per account whose registration has something to do. */
  carrier_registration_work: {
    account_id: string;
    partner_id: string;
    submission_id: string;
    due_at: Timestamp;
    lease_until: Timestamp | null;
    failures: Generated<number>;
    last_error: string | null;
    updated_at: Timestamp;
  };
  /** The local provider's registrations: each is decided (`outcome`) at `decided_at`. */
  local_carrier_registrations: {
    id: string;
    resource: string;
    decided_at: Timestamp;
    outcome: 'approved' | 'failed';
    reason: string | null;
    created_at: Timestamp;
  };
}
