import type { Actor, EventOf } from '@leadline/events';
import { sql } from 'kysely';
import { defineProjection } from '../projection';

type ConsentEvent = EventOf<'lead.consent_granted' | 'lead.opted_out' | 'lead.opted_in'>;

/** Who recorded a record, as the export shows it; the actor's kind first, so it sorts and filters. */
export function recordedBy(actor: Actor): string {
  switch (actor.kind) {
    case 'partner_key':
      return `partner_key:${actor.key_id}`;
    case 'embed_user':
      return `embed_user:${actor.user_name}`;
    case 'system':
      return `system:${actor.service}`;
    default: {
      const unknown: never = actor;
      throw new Error(`Unknown actor ${String(unknown)}`);
    }
  }
}

/**
 * How a texted record was read: a keyword, a sentence the rules recognise as a revocation, or one the AI
 * did (an opt-out recorded before revocations had a `method` was a keyword).
 */
const textedMethods = {
  keyword: 'sms_keyword',
  free_text: 'sms_free_text',
  ai: 'sms_ai',
} as const;

/** A record row, as the recordset below reads it (times as ISO strings). */
function rowOf(event: ConsentEvent) {
  const common = {
    account_id: event.account_id,
    phone: event.data.phone,
    lead_id: event.data.lead_id,
    recorded_at: event.occurred_at,
    recorded_by: recordedBy(event.actor),
  };
  if (event.type === 'lead.consent_granted') {
    const { data } = event;
    return {
      ...common,
      id: data.consent_id,
      action: 'granted',
      method: data.method,
      captured_at: data.captured_at,
      recorded_via: data.recorded_via,
      source_url: data.source_url,
      ip_address: data.ip_address,
      disclosure_text: data.disclosure_text,
      evidence_url: data.evidence_url,
      keyword: null,
      message_id: null,
    };
  }
  // The message the lead texted is the evidence: the record links to it rather than copying it.
  return {
    ...common,
    id: event.id,
    action: event.type === 'lead.opted_out' ? 'revoked' : 'granted',
    method: textedMethods[(event.type === 'lead.opted_out' && event.data.method) || 'keyword'],
    captured_at: event.occurred_at,
    recorded_via: 'sms',
    source_url: null,
    ip_address: null,
    disclosure_text: null,
    evidence_url: null,
    keyword: event.data.keyword,
    message_id: event.data.message_id,
  };
}

/**
 * A number's consent trail (leadConsentTrail, consentExport): the partner's grants and the opt-outs
 * and opt-ins the number texted, one row each, keyed by the grant's id or the event's id (applying a
 * record twice changes nothing). A texted record is captured when its message arrived (its inbound
 * message is projected before it, from the same decision).
 */
export const consentProjection = defineProjection(
  'consent',
  ['lead.consent_granted', 'lead.opted_out', 'lead.opted_in'],
  async (trx, events) => {
    if (events.length === 0) return;
    await sql`
      insert into consent_records (id, account_id, phone, lead_id, action, method, captured_at, recorded_at,
        recorded_via, recorded_by, source_url, ip_address, disclosure_text, evidence_url, keyword, message_id)
      select r.id, r.account_id, r.phone, r.lead_id, r.action, r.method,
        coalesce(m.sent_at, r.captured_at), r.recorded_at, r.recorded_via, r.recorded_by, r.source_url,
        r.ip_address, r.disclosure_text, r.evidence_url, r.keyword, r.message_id
      from jsonb_to_recordset(${JSON.stringify(events.map(rowOf))}::jsonb) as r(
        id text, account_id text, phone text, lead_id text, action text, method text,
        captured_at timestamptz, recorded_at timestamptz, recorded_via text, recorded_by text,
        source_url text, ip_address text, disclosure_text text, evidence_url text, keyword text,
        message_id text)
      left join messages m on m.id = r.message_id and m.account_id = r.account_id
      on conflict (id) do nothing`.execute(trx);
  },
);
