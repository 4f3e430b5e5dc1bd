import type { ColumnType } from 'kysely';
import type { EventOf } from '@leadline/events';
import type { Timestamp } from './columns';

/** The event a settled outbox row owes the log. */
export type OutboxReport =
  | { type: 'message.sent'; data: EventOf<'message.sent'>['data'] }
  | { type: 'message.failed'; data: EventOf<'message.failed'>['data'] };

/** The SMS gateway's outbox and pacing, and the inbound SMS the API took (in `public`). */
export interface MessagingTables {
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
  /** Inbound SMS by Twilio MessageSid, across accounts (see the 0011_inbound_receipts migration). */
  inbound_receipts: {
    message_sid: string;
    account_id: string;
    received_at: Timestamp;
    decided_at: Timestamp | null;
  };
  /** Opt-outs answered but not yet decided (see the 0011_inbound_receipts migration). */
  opt_out_guards: { account_id: string; phone: string; message_sid: string; created_at: Timestamp };
}
