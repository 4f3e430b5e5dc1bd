import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T = Record<string, unknown>> = ColumnType<T, string, string>;
/** Offsets are int64 on the wire; pg returns bigint columns as strings. */
type Int64 = ColumnType<string, string | bigint, string | bigint>;

/**
 * Read models: built only by the projector from the log, in the `read_model` schema, which `rebuild`
 * replaces wholesale. Named after the query they answer.
 */
export interface ReadModelTables {
  projection_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  partners: { id: string; name: string; created_at: Timestamp };
  accounts: {
    id: string;
    partner_id: string;
    name: string;
    company_name: string;
    slug: string;
    status: 'active' | 'deactivated';
    phone_number: string;
    forwarding_number: string | null;
    logo_url: string | null;
    accent_color: string | null;
    metadata: Json;
    created_at: Timestamp;
    updated_at: Timestamp;
    deactivated_at: Timestamp | null;
    total_leads: Generated<number>;
    total_conversations: Generated<number>;
    active_sequences: Generated<number>;
  };
  team_members: {
    id: string;
    account_id: string;
    email: string;
    name: string | null;
    role: string;
    phone_number: string | null;
    forwarding_number: string | null;
    invited_at: Timestamp;
  };
  webhooks: {
    id: string;
    partner_id: string;
    url: string;
    events: string[];
    active: boolean;
    /** AES-256-GCM ciphertext (see secret-box); the plaintext secret is never stored. */
    secret_ciphertext: string;
    disabled_reason: string | null;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}

/**
 * Operational state that is not derived from the log, in the `public` schema: credentials (kept off
 * the log, which analytics teams replay) and the local telephony provider's own number pool.
 */
export interface OperationalTables {
  partner_api_keys: {
    id: string;
    partner_id: string;
    key_hash: string;
    key_prefix: string;
    created_at: Generated<Timestamp>;
    revoked_at: Timestamp | null;
  };
  local_phone_numbers: { phone_number: string; account_id: string; allocated_at: Generated<Timestamp> };
  webhook_relay_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  webhook_lead_names: {
    account_id: string;
    phone: string;
    name: string | null;
    first_name: string | null;
    last_name: string | null;
  };
  webhook_deliveries: {
    id: string;
    webhook_id: string;
    partner_id: string;
    account_id: string | null;
    event_id: string;
    event_type: string;
    /** The exact bytes sent on every attempt, so retries carry the same body and signature. */
    body: string;
    status: WebhookDeliveryStatus;
    attempts: Generated<number>;
    /** Automatic retries already spent; indexes the retry schedule. */
    retries_done: Generated<number>;
    next_attempt_at: Timestamp | null;
    last_status_code: number | null;
    last_error: string | null;
    created_at: Timestamp;
    completed_at: Timestamp | null;
  };
  webhook_delivery_attempts: {
    delivery_id: string;
    attempt: number;
    attempted_at: Timestamp;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
    response_excerpt: string | null;
  };
}

/** pending: an attempt is scheduled; the other three are final. failed = retries exhausted. */
export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export type Database = ReadModelTables & OperationalTables;
