import type { EventData, NewEvent } from '@leadline/events';
import { DomainError } from '../errors';

/**
 * A number's consent now: the latest record of its trail by when it was given (`captured_at`), so
 * consent imported from an older system after a STOP does not undo the STOP. `none` before any record.
 */
export type ConsentStatus = 'granted' | 'revoked' | 'none';

/** What a proactive decision reads about consent: the account's rule and the number's status. */
export interface ConsentState {
  /** The account's `consent_required`. */
  required: boolean;
  status: ConsentStatus;
}

type GrantEvent = EventData<'lead.consent_granted'>;

/** The evidence of one grant, as the partner gives it. */
export type ConsentGrant = Pick<
  GrantEvent,
  'method' | 'captured_at' | 'source_url' | 'ip_address' | 'disclosure_text' | 'evidence_url'
>;

/**
 * Whether the consent rule holds a proactive message (a sequence step, AI-written ones included):
 * the account requires consent and the number has none. Replies to a lead who wrote first and manual
 * messages are not proactive and never held by it.
 */
export const heldForConsent = (consent: ConsentState): boolean =>
  consent.required && consent.status !== 'granted';

/**
 * The number's consent after `event` (an event about its number): a grant, or START, grants it; a STOP
 * revokes it. A grant backdated before the latest record would not change the status; within one
 * decision that cannot matter, since such a number is opted out and nothing proactive goes to it.
 */
export function evolveConsent(consent: ConsentState, event: NewEvent): ConsentState {
  switch (event.type) {
    case 'lead.consent_granted':
    case 'lead.opted_in':
      return { ...consent, status: 'granted' };
    case 'lead.opted_out':
      return { ...consent, status: 'revoked' };
    default:
      return consent;
  }
}

/** Clocks disagree by a little: a `captured_at` this far ahead of ours is taken as now. */
export const CAPTURED_AT_SKEW_MS = 5 * 60_000;

/** Why a grant cannot be recorded at `now`, if it cannot: consent is not given in the future. */
export function consentGrantProblem(grant: Pick<ConsentGrant, 'captured_at'>, now: Date): string | null {
  return new Date(grant.captured_at).getTime() > now.getTime() + CAPTURED_AT_SKEW_MS
    ? 'Must not be in the future.'
    : null;
}

const sameGrant = (a: ConsentGrant, b: ConsentGrant) =>
  a.method === b.method &&
  new Date(a.captured_at).getTime() === new Date(b.captured_at).getTime() &&
  a.source_url === b.source_url &&
  a.ip_address === b.ip_address &&
  a.disclosure_text === b.disclosure_text &&
  a.evidence_url === b.evidence_url;

export interface ConsentGrantRequest {
  phone: string;
  lead_id: string | null;
  grant: ConsentGrant;
  /** Where the grant sits in the request, to name it in a 400 (`body.consent.captured_at`...). */
  field: string;
}

/**
 * Records grants of consent, one event each. A grant identical to one the number already has (a lead
 * imported again with the same consent, a retried request) records nothing, so a daily re-import keeps
 * a trail of what happened rather than of how often it was sent; `recorded` says which grants were new.
 */
export function decideConsentGrants(
  requests: readonly ConsentGrantRequest[],
  recorded: ReadonlyMap<string, readonly ConsentGrant[]>,
  context: { newId: () => string; now: Date; via: GrantEvent['recorded_via'] },
): { events: NewEvent[]; recorded: boolean[] } {
  const problems = requests.flatMap(({ grant, field }) => {
    const message = consentGrantProblem(grant, context.now);
    return message ? [{ field: `${field}.captured_at`, message }] : [];
  });
  if (problems.length > 0) {
    throw new DomainError(400, 'validation_failed', 'The request is not valid.', { errors: problems });
  }
  const known = new Map([...recorded].map(([phone, grants]) => [phone, [...grants]]));
  const events: NewEvent[] = [];
  const wasRecorded = requests.map(({ phone, lead_id, grant }) => {
    const grants = known.get(phone) ?? [];
    if (grants.some((existing) => sameGrant(existing, grant))) return false;
    known.set(phone, [...grants, grant]);
    events.push({
      type: 'lead.consent_granted',
      data: {
        consent_id: context.newId(),
        phone,
        lead_id,
        ...grant,
        captured_at: new Date(grant.captured_at).toISOString(),
        recorded_via: context.via,
      },
    });
    return true;
  });
  return { events, recorded: wasRecorded };
}
