import {
  leadName,
  type DomainEvent,
  type EventOf,
  type EventType,
  type LeadNameFields,
  type WebhookEnvelope,
  type WebhookEventData,
  type WebhookEventType,
} from '@leadline/events';
import { isErased, type DocumentLinks } from '@leadline/runtime';

export { leadName, type LeadNameFields };

export interface LeadNames {
  get(accountId: string, phone: string): LeadNameFields | undefined;
}

/**
 * `lead_name` of a webhook about a lead: the relay's own record of the lead's names, kept in log order,
 * so it is the name as of the event. Events written before every producer applied the fallback carry
 * only the lead's `name` (null for a lead known by first and last name), so the event's own value is
 * used only when the relay knows no better.
 */
function nameOf(
  event: { account_id: string | null; data: { phone: string; lead_name?: string | null } },
  leads: LeadNames,
) {
  const known = event.account_id === null ? undefined : leads.get(event.account_id, event.data.phone);
  return leadName(known) ?? event.data.lead_name ?? null;
}

type Mapped = { [T in WebhookEventType]: { type: T; data: WebhookEventData<T> } }[WebhookEventType];
type Mapper<T extends EventType> = (
  event: EventOf<T>,
  leads: LeadNames,
  links: DocumentLinks | undefined,
) => Mapped;

/**
 * Domain event type → webhook event. Each feature that puts a webhook-worthy event on the log adds one
 * entry here (checklist.* arrives with its feature); the data shapes
 * are fixed in @leadline/events' webhook-events.
 */
export const webhookMappings: { [T in EventType]?: Mapper<T> } = {
  'lead.created': (event) => {
    const { data } = event;
    return {
      type: 'lead.created',
      data: {
        phone: data.phone,
        lead_name: leadName(data),
        first_name: data.first_name,
        last_name: data.last_name,
        email: data.email,
        company: data.company,
        source: data.source,
        external_id: data.external_id,
        status: data.status,
        origin: data.origin,
        metadata: data.metadata,
      },
    };
  },
  'conversation.started': (event, leads) => {
    const { data } = event;
    return {
      type: 'conversation.started',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        message_body: data.message_body,
        message_direction: data.direction,
        // `system` (a STOP/HELP compliance reply) always answers an inbound message, so it never starts
        // a conversation; null keeps the payload within its documented sources all the same.
        message_source: data.message_source === 'system' ? null : data.message_source,
      },
    };
  },
  'conversation.reply_received': (event, leads) => {
    const { data } = event;
    return {
      type: 'conversation.reply_received',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        message_body: data.message_body,
        message_direction: data.message_direction,
      },
    };
  },
  'conversation.handoff_requested': (event, leads) => {
    const { data } = event;
    return {
      type: 'conversation.handoff_requested',
      data: { phone: data.phone, lead_name: nameOf(event, leads), reason: data.reason },
    };
  },
  'lead.status_changed': (event, leads) => {
    const { data } = event;
    return {
      type: 'lead.status_changed',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        previous_status: data.previous_status,
        new_status: data.new_status,
      },
    };
  },
  'sequence.completed': (event, leads) => {
    const { data } = event;
    return {
      type: 'sequence.completed',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        sequence_id: data.sequence_id,
        sequence_name: data.sequence_name,
        total_steps: data.total_steps,
      },
    };
  },
  'sequence.reply_received': (event, leads) => {
    const { data } = event;
    return {
      type: 'sequence.reply_received',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        sequence_id: data.sequence_id,
        sequence_name: data.sequence_name,
        current_step: data.current_step,
        message_body: data.message_body,
      },
    };
  },
  'checklist.item_collected': (event, leads, links) => {
    const { data } = event;
    return {
      type: 'checklist.item_collected',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        requirement_id: data.requirement_id,
        requirement_name: data.requirement_name,
        requirement_type: data.requirement_type,
        value: data.value,
        // Signed when the event is fanned out: every retry carries the same body, so the URL is
        // valid for days rather than the hour an API read gets.
        file_url: data.document && links ? links.url(data.document.document_id) : null,
        collected_at: event.occurred_at,
        checklist_progress: data.checklist_progress,
      },
    };
  },
  'message.held': (event, leads) => {
    const { data } = event;
    return {
      type: 'message.held',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        message_id: data.message_id,
        reason: data.reason,
        next_attempt_at: data.next_attempt_at,
      },
    };
  },
  // Only the lead id: the phone and the name are exactly what was erased.
  'lead.erased': (event) => ({
    type: 'lead.erased',
    data: { lead_id: event.data.lead_id, erased_at: event.occurred_at },
  }),
  'account.erased': (event) => ({
    type: 'account.erased',
    data: { erased_at: event.data.erased_at, leads_erased: event.data.leads_erased },
  }),
  'compliance.registration_step_changed': (event) => {
    const { data } = event;
    return {
      type: 'compliance.status_changed',
      data: {
        account_id: event.account_id,
        step: data.step,
        previous_status: data.previous_status,
        new_status: data.status,
        reason: data.reason,
      },
    };
  },
  'checklist.completed': (event, leads) => {
    const { data } = event;
    return {
      type: 'checklist.completed',
      data: {
        phone: data.phone,
        lead_name: nameOf(event, leads),
        checklist_progress: data.checklist_progress,
        completed_items: data.completed_items,
        total_items: data.total_items,
      },
    };
  },
};

/** The webhook event a domain event becomes, or undefined when partners are not told about it. */
export function toWebhookEvent(
  event: DomainEvent,
  leads: LeadNames,
  links?: DocumentLinks,
): WebhookEnvelope | undefined {
  const mapper = webhookMappings[event.type] as Mapper<EventType> | undefined;
  if (!mapper || event.account_id === null) return undefined;
  // About a person erased before it was appended (a delivery report of a send already under way): the
  // partner has nothing to be told of someone it asked to forget. The erasure itself maps to its lead id.
  const data = event.data as { phone?: unknown };
  if (event.type !== 'lead.erased' && isErased(data.phone)) return undefined;
  const mapped = mapper(event as EventOf<EventType>, leads, links);
  return {
    // The domain event's id: the same event id for every webhook and every retry.
    id: event.id,
    account_id: event.account_id,
    created_at: event.occurred_at,
    ...mapped,
  } as WebhookEnvelope;
}
