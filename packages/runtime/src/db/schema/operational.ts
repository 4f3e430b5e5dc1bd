import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from './columns';

/**
 * Operational state that is not derived from the log, in the `public` schema: credentials (kept off
 * the log, which analytics teams replay), the local telephony provider's own number pool and the
 * partner API's reservations and idempotency answers. The workers' own state is in workers.ts,
 * messaging.ts and webhook-relay.ts.
 */
export interface OperationalTables {
  /**
   * One AES-256 key per data subject (a lead, by the keyed hash of its phone in the account) that seals
   * its personal data on the log, wrapped by the newest of PERSONAL_DATA_KEYS. Erasing the subject
   * clears `wrapped_key` and keeps the row, so what was sealed under it reads as erased, not as unknown.
   */
  personal_data_keys: {
    key_id: string;
    account_id: string;
    subject: string;
    wrapped_key: string | null;
    created_at: Generated<Date>;
    erased_at: Timestamp | null;
    /** The UTC day whose content the key seals (`YYYY-MM-DD`); null: the subject's lasting key. */
    period: ColumnType<string | null, string | null | undefined, string | null>;
  };
  partner_api_keys: {
    id: string;
    partner_id: string;
    key_hash: string;
    key_prefix: string;
    created_at: ColumnType<Date, Date | string | undefined, Date | string>;
    revoked_at: Timestamp | null;
    /** Within a minute: each instance records a key's use at most once a minute. */
    last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  };
  local_phone_numbers: { phone_number: string; account_id: string; allocated_at: Generated<Date> };
  rate_limit_counters: { key: string; window_started_at: Timestamp; count: number };
  /** Idempotency-Key answers of the partner API (see the 0011_idempotency_keys migration). */
  idempotency_keys: {
    partner_id: string;
    key: string;
    request_hash: string;
    owner: string | null;
    locked_until: Timestamp | null;
    response_status: number | null;
    response_headers: ColumnType<Record<string, string> | null, string | null, string | null>;
    response_body: Buffer | null;
    created_at: Timestamp;
    expires_at: Timestamp;
  };
  /** One number, one account (see the 0009_phone_number_reservations migration). */
  phone_number_reservations: {
    phone_number: string;
    account_id: string;
    partner_id: string;
    reserved_at: Generated<Timestamp>;
  };
  /** One slug per partner and account (see the 0011_account_slug_reservations migration). */
  account_slug_reservations: {
    partner_id: string;
    slug: string;
    account_id: string;
    reserved_at: Generated<Timestamp>;
  };
  /** Embed tokens, stored only as SHA-256 hashes (see the 0010_embed_tokens migration). */
  embed_tokens: {
    id: string;
    token_hash: string;
    partner_id: string;
    account_id: string;
    user_name: string | null;
    user_role: 'owner' | 'admin' | 'member';
    view: 'full' | 'conversations' | 'leads' | 'sequences' | 'settings';
    parent_origin: string | null;
    created_at: Timestamp;
    expires_at: Timestamp;
    revoked_at: Timestamp | null;
  };
  documents: {
    id: string;
    account_id: string;
    phone: string;
    message_id: string;
    media_index: number;
    content_type: string;
    file_size: number;
    text_content: string | null;
    bytes: Buffer | null;
    created_at: Timestamp;
  };
}
