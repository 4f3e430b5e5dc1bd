import type {
  DomainEvent,
  EventOf,
  EventType,
  WebhookEnvelope,
  WebhookEventData,
  WebhookEventType,
} from '@leadline/events';
import type { DocumentLinks } from '@leadline/runtime';

/** The name fields of a lead, as the relay keeps them to fill `lead_name`. */
export interface LeadNameFields {
  name: string | null;
  first_name: string | null;
  last_name: string | null;
}

export interface LeadNames {
  get(accountId: string, phone: string): LeadNameFields | undefined;
}

/** `lead_name`: the lead's `name`, else first and last name joined, else null. */
export function leadName(fields: LeadNameFields | undefined): string | null {
  if (!fields) return null;
  if (fields.name?.trim()) return fields.name.trim();
  const joined = [fields.first_name, fields.last_name]
    .map((part) => part?.trim())
    .filter(Boolean)
    .join(' ');
  return joined || null;
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
  'conversation.started': ({ data }) => ({
    type: 'conversation.started',
    data: {
      phone: data.phone,
      lead_name: data.lead_name,
      message_body: data.message_body,
      message_direction: data.direction,
      // `system` (a STOP/HELP compliance reply) always answers an inbound message, so it never starts
      // a conversation; null keeps the payload within its documented sources all the same.
      message_source: data.message_source === 'system' ? null : data.message_source,
    },
  }),
  'conversation.reply_received': ({ data }) => ({
    type: 'conversation.reply_received',
    data: {
      phone: data.phone,
      lead_name: data.lead_name,
      message_body: data.message_body,
      message_direction: data.message_direction,
    },
  }),
  'conversation.handoff_requested': ({ data }) => ({
    type: 'conversation.handoff_requested',
    data: { phone: data.phone, lead_name: data.lead_name, reason: data.reason },
  }),
  'lead.status_changed': (event, leads) => ({
    type: 'lead.status_changed',
    data: {
      phone: event.data.phone,
      lead_name: leadName(leads.get(event.account_id, event.data.phone)),
      previous_status: event.data.previous_status,
      new_status: event.data.new_status,
    },
  }),
  'sequence.completed': ({ data }) => ({
    type: 'sequence.completed',
    data: {
      phone: data.phone,
      lead_name: data.lead_name,
      sequence_id: data.sequence_id,
      sequence_name: data.sequence_name,
      total_steps: data.total_steps,
    },
  }),
  'sequence.reply_received': ({ data }) => ({
    type: 'sequence.reply_received',
    data: {
      phone: data.phone,
      lead_name: data.lead_name,
      sequence_id: data.sequence_id,
      sequence_name: data.sequence_name,
      current_step: data.current_step,
      message_body: data.message_body,
    },
  }),
  'checklist.item_collected': (event, _leads, links) => {
    const { data } = event;
    return {
      type: 'checklist.item_collected',
      data: {
        phone: data.phone,
        lead_name: data.lead_name,
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
  'checklist.completed': ({ data }) => ({
    type: 'checklist.completed',
    data: {
      phone: data.phone,
      lead_name: data.lead_name,
      checklist_progress: data.checklist_progress,
      completed_items: data.completed_items,
      total_items: data.total_items,
    },
  }),
};

/** The webhook event a domain event becomes, or undefined when partners are not told about it. */
export function toWebhookEvent(
  event: DomainEvent,
  leads: LeadNames,
  links?: DocumentLinks,
): WebhookEnvelope | undefined {
  const mapper = webhookMappings[event.type] as Mapper<EventType> | undefined;
  if (!mapper || event.account_id === null) return undefined;
  const mapped = mapper(event as EventOf<EventType>, leads, links);
  return {
    // The domain event's id: the same event id for every webhook and every retry.
    id: event.id,
    account_id: event.account_id,
    created_at: event.occurred_at,
    ...mapped,
  } as WebhookEnvelope;
}
