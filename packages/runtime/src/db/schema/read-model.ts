import type { ColumnType, Generated } from 'kysely';
import type {
  CarrierResource,
  EnrollmentHoldReason,
  RegistrationProfile,
  RegistrationStatus,
  SendingWindow,
  SequenceStep,
} from '@leadline/domain';
import type { Int64, Json, Timestamp } from './columns';
import type { ParkedRecordRow } from './parked';

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
  /**
   * Opt-outs kept past the erasure of their person, by the number's keyed hash (`subjectOf`): the
   * number is opted out for every decision until it texts START.
   */
  opt_out_suppressions: { account_id: string; subject: string; suppressed_at: Timestamp };
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
