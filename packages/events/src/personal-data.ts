import type { DomainEvent } from './catalog';

/**
 * Which values of an event are personal data, and whose. On the log every such value is sealed under
 * a key of its data subject (see the runtime's personal-data sealer), so destroying that key erases the
 * value from every copy of the log. Ids, types, timestamps, statuses and counts stay clear, and so does
 * what belongs to the business rather than to a person (an account's name and number, its prompt, a
 * sequence's name). `personal-data.unit.test.ts` checks that every text field of every event is either
 * listed here or reviewed as clear, so a new field cannot reach the log in clear unnoticed.
 */

/** Whose data a scope holds: a lead (named by its phone within the account) or a team member (by id). */
export type DataSubjectKind = 'lead' | 'team_member';

export interface PersonalScope {
  /** The object holding the values: the event's `data`, or each element of an array in it. */
  readonly at: string;
  readonly subject: { readonly kind: DataSubjectKind; readonly field: string };
  /**
   * The personal values, as paths inside the scope: `a.b` for a nested field, `a[].b` for a field of
   * each element, `a.*` for every value of a free-form record (its keys are the partner's field names).
   */
  readonly fields: readonly string[];
  /**
   * Of `fields`, the conversation's content, which the account's retention expires: sealed under the
   * subject's key for the UTC day the event occurred, destroyed once that day is past the account's
   * `retention_days`. The other fields (who the person is) stay under the subject's lasting key.
   */
  readonly expiring?: readonly string[];
}

const leadFields = [
  'name',
  'first_name',
  'last_name',
  'email',
  'company',
  'notes',
  'external_id',
  'property_address',
  'metadata.*',
];
const lead = (fields: readonly string[], at = 'data', expiring: readonly string[] = []): PersonalScope[] => [
  {
    at,
    subject: { kind: 'lead', field: 'phone' },
    fields: ['phone', ...fields, ...expiring],
    ...(expiring.length > 0 && { expiring }),
  },
];
/** Message bodies, media links, collected values and summaries quoting the conversation. */
const content = (expiring: readonly string[], fields: readonly string[] = []) =>
  lead(fields, 'data', expiring);

export const personalDataScopes: Partial<Record<DomainEvent['type'], readonly PersonalScope[]>> = {
  'team_member.invited': [
    {
      at: 'data',
      subject: { kind: 'team_member', field: 'member_id' },
      fields: ['email', 'name', 'phone_number', 'forwarding_number'],
    },
  ],
  'lead.created': lead(leadFields),
  'lead.updated': lead(leadFields.map((field) => `changes.${field}`)),
  'lead.status_changed': lead([]),
  'lead.deleted': lead([]),
  'lead.erased': lead([]),
  'message.received': content(['body', 'media[].url']),
  'message.inbound_received': content(['body', 'media[].url']),
  // The staff member's name a manual message went under is a person's too: under the lead's key.
  'message.outbound_requested': content(['body'], ['sender_name']),
  'message.sent': lead([]),
  'message.failed': lead(['error_message']),
  'message.held': lead([]),
  'message.status_updated': lead([]),
  'conversation.started': content(['message_body'], ['lead_name']),
  'conversation.reply_received': content(['message_body'], ['lead_name']),
  'conversation.ai_paused': lead([]),
  'conversation.ai_resumed': lead([]),
  'conversation.handoff_requested': lead(['lead_name', 'reason']),
  'conversation.handoff_cleared': lead([]),
  'lead.opted_out': lead(['lead_name', 'keyword', 'reason']),
  'lead.opted_in': lead(['lead_name', 'keyword']),
  'lead.consent_granted': lead(['ip_address', 'evidence_url']),
  'sequence.unenrolled': lead([]),
  'sequence.enrolled': lead([]),
  'sequence.leads_enrolled': lead([], 'data.enrollments[]'),
  'sequence.step_sent': lead([]),
  'sequence.step_skipped': lead([]),
  'sequence.step_deferred': lead([]),
  'sequence.step_held': lead([]),
  'sequence.step_held_for_consent': lead([]),
  'sequence.completed': lead(['lead_name']),
  'sequence.reply_received': content(['message_body'], ['lead_name']),
  'sequence.ai_step_requested': lead([]),
  'sequence.ai_step_failed': lead([]),
  'checklist.item_collected': content(['value'], ['lead_name']),
  'checklist.completed': lead(['lead_name']),
  'ai.turn_completed': content(['summary'], ['reason']),
};

/**
 * Event types that only report on work begun before them: the SMS gateway's sends, holds and failures,
 * the carrier's delivery reports, and the end of an AI turn (a reply to the lead's messages or a
 * sequence step, whose model call may still be under way when the lead is erased: the turn is then
 * skipped as `lead_not_found`, its summary written as erased). Appended after the person was erased,
 * they must not key the person again, which would make the number (and what the AI wrote of them)
 * readable on the log once more: where the lead's lasting key is erased and no new one is live, their
 * values are written as erased. Anything else about an erased number (an import, a text from it)
 * starts over under a new key, and a report after that uses it.
 */
export const reportsOnEarlierWork: ReadonlySet<DomainEvent['type']> = new Set([
  'message.held',
  'message.sent',
  'message.failed',
  'message.status_updated',
  'ai.turn_completed',
  'sequence.ai_step_failed',
]);

/**
 * Text fields reviewed and kept clear, by name wherever they occur: identifiers we mint or a provider
 * mints, timestamps, enumerations kept as text, and business data of the account or the partner.
 */
export const clearFieldNames: ReadonlySet<string> = new Set([
  // Identifiers and references (no meaning outside this system or the carrier's).
  ...['lead_id', 'message_id', 'message_ids', 'reply_message_id', 'enrollment_id', 'sequence_id'],
  ...['requirement_id', 'consent_id', 'webhook_id', 'delivery_id', 'event_id', 'file_id', 'url_id'],
  ...['submission_id', 'provider_id', 'member_id', 'document_id', 'provider_message_id', 'subject'],
  // Times, states and codes.
  ...['next_step_at', 'next_attempt_at', 'due_at', 'paused_until', 'captured_at', 'start', 'end'],
  ...['time_zone', 'zone', 'state', 'provider_status', 'error_code', 'content_type', 'event_type'],
  ...['responder', 'erased_at'],
  // The business's own data: the account, its number, its configuration, its sequences and prompt.
  ...['to', 'slug', 'company_name', 'phone_number', 'sequence_name', 'requirement_name'],
  ...['instructions', 'source', 'source_url', 'disclosure_text', 'url', 'secret_ciphertext', 'error'],
  ...['role_persona', 'tone_voice', 'response_style', 'conversation_rules', 'special_instructions'],
  ...['system_prompt', 'content', 'last4', 'ciphertext', 'description', 'message', 'title'],
  ...['content_hash', 'etag', 'last_modified', 'account_id', 'last_error', 'forwarding_number'],
  ...['logo_url', 'accent_color', 'expired_before'],
]);

/**
 * Fields kept clear by their place in one event type, where the same name elsewhere is personal (or
 * where the field is business data under a generic name).
 */
export const clearFieldsByEvent: Partial<Record<DomainEvent['type'], readonly string[]>> = {
  'partner.created': ['name'],
  // An account's metadata is the partner's data about its customer, a business.
  'account.created': ['name', 'metadata.*'],
  'account.updated': ['name', 'metadata.*'],
  'requirement.created': ['name'],
  'requirement.updated': ['changes.name'],
  'sequence.created': ['name'],
  'sequence.updated': ['changes.name'],
  'context_file.uploaded': ['name'],
  'sequence.ai_step_failed': ['reason'],
  'compliance.registration_step_changed': ['reason'],
  // The carrier registration is the business's filing: its legal name, address and the contact it
  // names for the carriers, which the carriers publish in their registry.
  'compliance.registration_submitted': [
    ...['profile.legal_name', 'profile.website', 'profile.address.street', 'profile.address.city'],
    ...['profile.address.region', 'profile.address.postal_code', 'profile.address.country'],
    ...['profile.contact.first_name', 'profile.contact.last_name', 'profile.contact.title'],
    ...['profile.contact.email', 'profile.contact.phone', 'profile.use_case_description'],
    ...['profile.sample_messages[]', 'profile.message_flow', 'profile.opt_in_keywords[]'],
    ...['profile.address.street_secondary', 'profile.opt_in_message'],
  ],
};

/** Where a personal value sits, for the sealer's associated data: the scope's path and the field's. */
export interface PersonalValueSite {
  /** The scope and field, with array positions left out: `data.enrollments[].phone`. */
  readonly path: string;
  /** Whether the value is content the account's retention expires (see `PersonalScope.expiring`). */
  readonly expiring: boolean;
}

/** Called once per scope with the scope's subject field; returns how to map each value, or nothing. */
export type PersonalScopeMapper = (
  subject: { kind: DataSubjectKind; value: unknown },
  scope: PersonalScope,
) => ((value: unknown, site: PersonalValueSite) => unknown) | undefined;

type Json = Record<string, unknown>;

/** A scope with its paths split and its sites made once per event type, not once per event. */
interface ScopePlan {
  scope: PersonalScope;
  at: string[];
  fields: { segments: string[]; site: PersonalValueSite }[];
}
const plans = new Map<string, ScopePlan[]>();
function planOf(type: DomainEvent['type']): ScopePlan[] | undefined {
  let plan = plans.get(type);
  if (plan) return plan;
  const scopes = personalDataScopes[type];
  if (!scopes) return undefined;
  plan = scopes.map((scope) => ({
    scope,
    at: scope.at.split('.'),
    fields: scope.fields.map((field) => ({
      segments: field.split('.'),
      site: { path: `${scope.at}.${field}`, expiring: scope.expiring?.includes(field) ?? false },
    })),
  }));
  plans.set(type, plan);
  return plan;
}

/**
 * Maps every personal value of `event` through the function `mapScope` returns for its scope, copying
 * only the objects on the way to a changed value (the input is never modified). Nulls and absent
 * fields are left alone: their absence is not personal.
 */
export function mapPersonalData<E extends DomainEvent>(event: E, mapScope: PersonalScopeMapper): E {
  const plan = planOf(event.type);
  if (!plan) return event;
  let result = event as unknown as Json;
  for (const { scope, at, fields } of plan) {
    result = mapPath(result, at, (holder) => {
      const object = holder as Json;
      const mapValue = mapScope({ kind: scope.subject.kind, value: object[scope.subject.field] }, scope);
      if (!mapValue) return object;
      let mapped = object;
      for (const { segments, site } of fields) {
        mapped = mapPath(mapped, segments, (value) =>
          value === null || value === undefined ? value : mapValue(value, site),
        ) as Json;
      }
      return mapped;
    }) as Json;
  }
  return result as unknown as E;
}

/**
 * Replaces what `segments` (from `from` on) reach inside `node` with `map` of it, copying the objects
 * on the way.
 */
function mapPath(
  node: unknown,
  segments: readonly string[],
  map: (value: unknown) => unknown,
  from = 0,
): unknown {
  if (from === segments.length) return map(node);
  if (node === null || typeof node !== 'object') return node;
  const head = segments[from]!;
  const object = node as Json;
  if (head === '*') {
    let copy: Json | undefined;
    for (const [key, value] of Object.entries(object)) {
      const mapped = mapPath(value, segments, map, from + 1);
      if (mapped !== value) (copy ??= { ...object })[key] = mapped;
    }
    return copy ?? object;
  }
  const isArray = head.endsWith('[]');
  const name = isArray ? head.slice(0, -2) : head;
  const child = object[name];
  let mapped: unknown;
  if (isArray) {
    if (!Array.isArray(child)) return object;
    const elements = child.map((element) => mapPath(element, segments, map, from + 1));
    mapped = elements.some((element, index) => element !== child[index]) ? elements : child;
  } else {
    mapped = mapPath(child, segments, map, from + 1);
  }
  return mapped === child ? object : { ...object, [name]: mapped };
}
