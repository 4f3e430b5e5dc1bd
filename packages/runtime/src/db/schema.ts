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
  leads: {
    id: string;
    account_id: string;
    phone: string;
    name: string | null;
    first_name: string | null;
    last_name: string | null;
    email: string | null;
    company: string | null;
    notes: string | null;
    source: string | null;
    external_id: string | null;
    property_address: string | null;
    auto_sequence: boolean;
    metadata: Json;
    status: 'new' | 'contacted' | 'qualified' | 'converted' | 'lost';
    origin: string;
    created_at: Timestamp;
    updated_at: Timestamp;
    last_message_at: Timestamp | null;
  };
  requirements: {
    id: string;
    account_id: string;
    name: string;
    type: 'document' | 'text' | 'email' | 'phone' | 'number' | 'date';
    description: string | null;
    required: boolean;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  lead_checklist_items: {
    lead_id: string;
    requirement_id: string;
    account_id: string;
    value: string | null;
    file_url: string | null;
    collected_at: Timestamp;
  };
  usage_counters: {
    account_id: string;
    /** The UTC month, `YYYY-MM`. */
    period: string;
    partner_id: string;
    conversations: Generated<number>;
    messages_sent: Generated<number>;
    messages_received: Generated<number>;
    leads_imported: Generated<number>;
    documents_collected: Generated<number>;
    sequences_completed: Generated<number>;
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
}

export type Database = ReadModelTables & OperationalTables;
