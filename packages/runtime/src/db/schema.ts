import type { ColumnType, Generated } from 'kysely';
import type { EventOf } from '@leadline/events';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T = Record<string, unknown>> = ColumnType<T, string, string>;
/** Offsets are int64 on the wire; pg returns bigint columns as strings. */
type Int64 = ColumnType<string, string | bigint, string | bigint>;

import type {
  CarrierResource,
  EnrollmentHoldReason,
  RegistrationProfile,
  RegistrationStatus,
  SendingWindow,
  SequenceStep,
} from '@leadline/domain';

export type { SendingWindow, SequenceStep };

/**
 * Read models: built only by the projector from the log, in the `read_model` schema, which `rebuild`
 * replaces wholesale. Named after the query they answer.
 */
export interface ReadModelTables {
  projection_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  /** The projector's parked and held records (see log-consumer.ts). */
  projection_parked_records: ParkedRecordRow;
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
    ai_pause_minutes: Generated<number>;
    /** When the partner released the account's number; it then receives no inbound SMS on it. */
    phone_number_released_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /** Null: the default window. */
    sending_window: Json<SendingWindow> | null;
    /** Proactive messages need recorded consent (false for accounts created before it existed). */
    consent_required: Generated<boolean>;
    /** Days message bodies and documents are kept; null: kept for good. */
    retention_days: ColumnType<number | null, number | null | undefined, number | null>;
    /** Messages a second the account's number may send; null: the deployment's default. */
    messages_per_second: ColumnType<number | null, number | null | undefined, number | null>;
    /** Messages a carriers' day the account's brand may send; null: the deployment's default. */
    daily_cap: ColumnType<number | null, number | null | undefined, number | null>;
    /** When the partner first erased the account (a privacy request); null if never. */
    erased_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /** The people the account's erasures erased so far. */
    leads_erased: Generated<number>;
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
    /** Unused: a document's URL is signed when it is read (see document_id). */
    file_url: string | null;
    collected_at: Timestamp;
    document_id: string | null;
    content_type: string | null;
  };
  /** conversationList: one row per (account, lead phone) that exchanged a message; outlives the lead. */
  conversations: {
    account_id: string;
    phone: string;
    started_at: Timestamp | null;
    preview: string | null;
    last_message_at: Timestamp | null;
    message_count: Generated<number>;
    needs_handoff: Generated<boolean>;
    ai_paused_until: Timestamp | null;
    opted_out: Generated<boolean>;
    opted_out_at: Timestamp | null;
    /** Kept by the AI agent (ai.turn_completed). */
    summary: string | null;
    /** When the summary was written: the account's retention expires it with the messages of its day. */
    summary_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  };
  /** conversationMessages. */
  messages: {
    id: string;
    account_id: string;
    phone: string;
    direction: 'inbound' | 'outbound';
    body: string;
    source: 'manual' | 'sequence' | 'ai' | 'system' | null;
    sender_name: string | null;
    status: 'received' | 'queued' | 'sent' | 'delivered' | 'undelivered' | 'failed';
    /** Whether `message.sent` was applied (counted in messages_sent). */
    sent: Generated<boolean>;
    provider_message_id: string | null;
    error_code: string | null;
    media: ColumnType<{ url: string; content_type: string | null }[], string | undefined, string>;
    sent_at: Timestamp;
    /** The account's retention expired the body and media (they read as empty). */
    content_expired: Generated<boolean>;
    /** Why the gateway holds this queued message (the latest `message.held`); null once sent or failed. */
    held_reason: ColumnType<string | null, string | null | undefined, string | null>;
    /** When the gateway decides again; null while it waits for an event (or when not held). */
    held_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
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
  sequences: {
    id: string;
    account_id: string;
    name: string;
    description: string | null;
    is_active: boolean;
    is_default: boolean;
    steps: Json<SequenceStep[]>;
    steps_version: number;
    enrolled_count: Generated<number>;
    completed_count: Generated<number>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  sequence_step_versions: { sequence_id: string; version: number; steps: Json<SequenceStep[]> };
  /** A lead's enrollment in a sequence; `next_step_at` is what the sequencer claims on. */
  sequence_enrollments: {
    id: string;
    account_id: string;
    sequence_id: string;
    sequence_name: string;
    lead_id: string;
    phone: string;
    /** `removed`: the lead was deleted (the row stays so that a replay counts nothing twice). */
    status: 'active' | 'completed' | 'cancelled' | 'opted_out' | 'removed';
    steps_version: number;
    total_steps: number;
    current_step: number;
    next_step_at: Timestamp | null;
    awaiting_ai: Generated<boolean>;
    replied: Generated<boolean>;
    /** Why the next step waits (see `Enrollment.hold_reason`); `no_consent` rows are not claimed. */
    hold_reason: ColumnType<
      EnrollmentHoldReason | null,
      EnrollmentHoldReason | null | undefined,
      EnrollmentHoldReason | null
    >;
    started_at: Timestamp;
    ended_at: Timestamp | null;
    updated_at: Timestamp;
  };
  /**
   * A number's consent trail (`leadConsentTrail`, `consentExport`): grants recorded by the partner, and
   * the opt-outs (revocations) and opt-ins (grants by keyword) it texted. `id` is the grant's
   * `consent_id`, or the event id of an opt-out or opt-in. Its status is the record captured last.
   */
  consent_records: {
    id: string;
    account_id: string;
    phone: string;
    lead_id: string | null;
    action: 'granted' | 'revoked';
    method: 'web_form' | 'paper' | 'verbal' | 'sms_keyword' | 'import';
    captured_at: Timestamp;
    recorded_at: Timestamp;
    recorded_via: 'api' | 'import' | 'bulk_import' | 'sms';
    /** Who recorded it: `partner_key:<key id>`, `embed_user:<name>` or `system:<service>`. */
    recorded_by: string;
    source_url: string | null;
    ip_address: string | null;
    disclosure_text: string | null;
    evidence_url: string | null;
    /** For a texted opt-out or opt-in: the keyword it was read as, and the message. */
    keyword: string | null;
    message_id: string | null;
  };
  /** Turns the AI agent handled (ai.turn_completed), so none is handled twice. */
  ai_handled_turns: { account_id: string; turn_key: string; outcome: string; handled_at: Timestamp };
  ai_prompt_settings: {
    account_id: string;
    mode: 'guided' | 'advanced';
    role_persona: string | null;
    tone_voice: string | null;
    response_style: string | null;
    conversation_rules: string | null;
    special_instructions: string | null;
    system_prompt: string | null;
    updated_at: Timestamp;
  };
  context_files: {
    id: string;
    account_id: string;
    name: string;
    file_type: 'txt' | 'md';
    file_size: number;
    content: string;
    created_at: Timestamp;
  };
  context_urls: {
    id: string;
    account_id: string;
    url: string;
    title: string | null;
    content: string | null;
    content_hash: string | null;
    etag: string | null;
    last_modified: string | null;
    last_scraped_at: Timestamp | null;
    last_attempt_at: Timestamp | null;
    last_error: string | null;
    created_at: Timestamp;
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
  /** The account's carrier registration (its latest submission), step by step. */
  carrier_registrations: {
    account_id: string;
    partner_id: string;
    submission_id: string;
    profile: Json<RegistrationProfile>;
    tax_id_last4: string;
    tax_id_ciphertext: string;
    submitted_at: Timestamp;
    updated_at: Timestamp;
    customer_profile_status: RegistrationStatus;
    customer_profile_reason: string | null;
    customer_profile_updated_at: Timestamp;
    brand_status: RegistrationStatus;
    brand_reason: string | null;
    brand_updated_at: Timestamp;
    campaign_status: RegistrationStatus;
    campaign_reason: string | null;
    campaign_updated_at: Timestamp;
    number_status: RegistrationStatus;
    number_reason: string | null;
    number_updated_at: Timestamp;
    resources: ColumnType<Partial<Record<CarrierResource, string>>, string | undefined, string>;
  };
}

/**
 * Operational state that is not derived from the log, in the `public` schema: credentials (kept off
 * the log, which analytics teams replay), the local telephony provider's own number pool and the SMS
 * gateway's outbox.
 */
/** The event a settled outbox row owes the log. */
export type OutboxReport =
  | { type: 'message.sent'; data: EventOf<'message.sent'>['data'] }
  | { type: 'message.failed'; data: EventOf<'message.failed'>['data'] };

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
  sequencer_leases: { enrollment_id: string; step_order: number; lease_until: Timestamp };
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
  /** The SMS gateway's outbox (see the 0003_messaging migration). */
  sms_outbox: {
    message_id: string;
    account_id: string;
    partner_id: string;
    phone: string;
    body: string;
    source: string;
    correlation_id: string;
    causation_id: string;
    state: ColumnType<'pending' | 'sending' | 'sent' | 'failed', string | undefined, string>;
    lease_until: Timestamp | null;
    sending_at: Timestamp | null;
    provider_message_id: string | null;
    created_at: ColumnType<Date, Date | string | undefined, Date | string>;
    updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
    /** When the request was made (its event's time); null for rows queued before it was kept. */
    requested_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /** A manual or compliance message, failed as expired when it waited too long. */
    expirable: ColumnType<boolean, boolean | undefined, boolean>;
    /** The `message.sent` / `message.failed` that reports the row's terminal state. */
    report: ColumnType<OutboxReport | null, string | undefined, string | null>;
    /** When `report` was appended to the log; null while it is owed. */
    reported_at: Timestamp | null;
    /** The claim the row is leased under (see the 0013_sms_gateway_checkpoints migration). */
    claim_token: ColumnType<string | null, string | null | undefined, string | null>;
    /** A held row is not claimed before this (see the 0015_sms_outbox_holds_and_pacing migration). */
    held_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
    /** Why it is held (a `message.held` reason); recorded once per reason. */
    hold_reason: ColumnType<string | null, string | null | undefined, string | null>;
    /** For a compliance reply, the keyword it answers (`opt_out`, `opt_in`, `help`). */
    answers: ColumnType<string | null, string | null | undefined, string | null>;
    /** A sequence step: it leaves only inside the lead's sending window. */
    proactive: ColumnType<boolean, boolean | undefined, boolean>;
  };
  /** Each sending number's pace (see the 0015_sms_outbox_holds_and_pacing migration). */
  sms_number_pace: {
    phone_number: string;
    account_id: string;
    next_send_at: ColumnType<Date, Date | string, Date | string>;
    /** The carriers' day (`YYYY-MM-DD`, Pacific) `sent_on_cap_day` counts. */
    cap_day: string;
    sent_on_cap_day: number;
    updated_at: ColumnType<Date, Date | string, Date | string>;
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
  ai_agent_checkpoints: { topic: string; partition: number; next_offset: Int64; updated_at: Timestamp };
  /** Inbound SMS by Twilio MessageSid, across accounts (see the 0011_inbound_receipts migration). */
  inbound_receipts: {
    message_sid: string;
    account_id: string;
    received_at: Timestamp;
    decided_at: Timestamp | null;
  };
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
  /** Opt-outs answered but not yet decided (see the 0011_inbound_receipts migration). */
  opt_out_guards: { account_id: string; phone: string; message_sid: string; created_at: Timestamp };
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
    /** While a relay is sending it: the delivery is not due again before this. */
    leased_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
    /** The claim of the relay holding the lease; its outcome is recorded only under that claim. */
    claim_token: ColumnType<string | null, string | null | undefined, string | null>;
  };
  /** webhook.disabled and webhook.delivery_failed decided by the relay, until they are on the log. */
  webhook_relay_outbox: {
    id: string;
    partner_id: string;
    correlation_id: string;
    event: { type: string; data: unknown };
    created_at: Timestamp;
    leased_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
    appended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  };
  /** Webhook events the relay fanned out recently, for webhooks registered before but projected after. */
  webhook_relay_events: {
    event_id: string;
    partner_id: string;
    account_id: string | null;
    event_type: string;
    occurred_at: Timestamp;
    body: string;
    relayed_at: Timestamp;
  };
  webhook_relay_backfills: { webhook_id: string; done_at: Timestamp };
  webhook_delivery_attempts: {
    delivery_id: string;
    attempt: number;
    attempted_at: Timestamp;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
    response_excerpt: string | null;
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

/** pending: an attempt is scheduled; the other three are final. failed = retries exhausted. */
export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

/** Where each partition of each topic of a generation is: offsets by partition, keyed by topic name. */
export type TopicOffsets = Record<string, string[]>;

/** The log's topic generations and the copies between them (see log-generations.ts, log-migration.ts). */
export interface LogGenerationTables {
  log_generations: {
    generation: number;
    /** Partitions of each topic kind: `{ account: 32, partner: 2 }`. */
    partitions: Json<{ account: number; partner: number }>;
    state: 'migrating' | 'active' | 'draining' | 'retired';
    /** The transform the history was copied through (`identity` for generation 1). */
    transform: string;
    /** Where live writes begin on this generation, after the copied history: its consumers start here. */
    start_offsets: Json<TopicOffsets> | null;
    /** Where this generation ends: set when it stopped taking writes; its consumers drain up to here. */
    end_offsets: Json<TopicOffsets> | null;
    /** The previous generation's topics made read-only for the cutover, with the limit they had. */
    write_protected: Json<Record<string, string>> | null;
    created_at: Generated<Timestamp>;
    fenced_at: Timestamp | null;
    activated_at: Timestamp | null;
    retired_at: Timestamp | null;
  };
  /** How far the copy into a generation has read each partition of the previous one. */
  log_copy_progress: { generation: number; topic: string; partition: number; next_offset: Int64 };
  /**
   * Where copied records landed: the records of `source_offsets` (in order) went, one after another,
   * to `target_partition` from `target_first`. One row per copy request and target partition.
   */
  log_copy_chunks: {
    generation: number;
    source_topic: string;
    source_partition: number;
    source_first: Int64;
    source_last: Int64;
    target_topic: string;
    target_partition: number;
    target_first: Int64;
    source_offsets: ColumnType<string[], string[], string[]>;
  };
}

export type Database = ReadModelTables & OperationalTables & LogGenerationTables;
