import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from './columns';

/** pending: an attempt is scheduled; the other three are final. failed = retries exhausted. */
export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

/** The webhook relay's deliveries, their attempts and its outbox (in `public`). */
export interface WebhookRelayTables {
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
}
