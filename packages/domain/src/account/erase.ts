import type { NewEvent } from '@leadline/events';

/** A person the account holds, named by a phone: in clear, or the erased marker a read model kept. */
export interface HeldPerson {
  phone: string;
  /** The keyed hash naming the person (the runtime's `subjectOf(account, 'lead', phone)`). */
  subject: string;
  leadId: string | null;
}

/** What one of an account erasure's commands finds in the account, under its lock. */
export interface AccountErasureState {
  status: 'active' | 'deactivated';
  /** When the account was first erased, if it was. */
  erasedAt: Date | null;
  /** The people its earlier erasures erased. */
  leadsErased: number;
  /** Every phone the read models hold for the account (leads, conversations, messages, consent, enrollments). */
  people: readonly HeldPerson[];
  /**
   * Lead subjects with a live key and no row left to name them by phone (their person is known to the
   * log only): erased under the erased marker, which names the subject without the phone.
   */
  keyOnlySubjects: readonly string[];
  /** Whether any key of the account is live (a team member's included), or a team member is listed. */
  holdsOtherPersonalData: boolean;
}

export interface AccountErasureLimits {
  now: Date;
  /** The most people one command erases while more than `lastBatch` are left. */
  batchSize: number;
  /** At most this many left: they are erased by the command that finishes. */
  lastBatch: number;
  /** The people the request erased in its earlier commands. */
  erasedNow: number;
  /** Finish now whatever is left (the request has taken as many turns as it may). */
  finish: boolean;
}

export type AccountErasureDecision =
  | {
      /** Some people erased now; `finish`: `account.erased` too, and every key of the account goes with it. */
      action: 'erase' | 'finish';
      events: NewEvent[];
      subjects: string[];
      phones: string[];
      leadIds: string[];
      erasedAt: Date;
      leadsErased: number;
    }
  /** Erased before, and nothing has appeared since: answered as done, nothing appended. */
  | { action: 'already_erased'; events: []; erasedAt: Date; leadsErased: number };

const marker = (subject: string) => `erased:${subject}`;

/**
 * Erasing an account (a privacy request for everyone it holds), one command at a time under the
 * account's lock: the first deactivates it (as a deactivation would); while more than `lastBatch`
 * people are left, each command appends `lead.erased` for up to `batchSize` of them; the command that
 * finds at most `lastBatch` left (or is told to finish) erases them all and appends `account.erased`,
 * and its transaction destroys every key of the account. So imports arriving while it runs cannot keep
 * it going: what came during one turn is small, and is erased by the next. The last command's
 * `lead.erased` name each person by the erased marker, never the phone: their keys are destroyed in
 * its own transaction, so nothing in it is sealed (consumers match by the subject). A request repeated
 * after the erasure erases what appeared since and keeps the first erasure's time.
 */
export function decideAccountErasure(
  state: AccountErasureState,
  { now, batchSize, lastBatch, erasedNow, finish }: AccountErasureLimits,
): AccountErasureDecision {
  const deactivation: NewEvent[] =
    state.status === 'active' ? [{ type: 'account.deactivated', data: {} }] : [];
  const everyone = [
    ...state.people,
    ...state.keyOnlySubjects.map((subject) => ({ phone: marker(subject), subject, leadId: null })),
  ];
  const erasedAt = state.erasedAt ?? now;
  const untouched = everyone.length === 0 && erasedNow === 0 && deactivation.length === 0;
  if (state.erasedAt && untouched && !state.holdsOtherPersonalData) {
    return { action: 'already_erased', events: [], erasedAt, leadsErased: state.leadsErased };
  }
  const last = finish || everyone.length <= lastBatch;
  const people = last ? everyone : everyone.slice(0, batchSize);
  const leadsErased = state.leadsErased + erasedNow + people.length;
  const erasures = people.map(({ phone, subject, leadId }): NewEvent => ({
    type: 'lead.erased',
    data: { lead_id: leadId, phone: last ? marker(subject) : phone, subject },
  }));
  return {
    action: last ? 'finish' : 'erase',
    events: [
      ...deactivation,
      ...erasures,
      ...(last
        ? [
            {
              type: 'account.erased' as const,
              data: { erased_at: erasedAt.toISOString(), leads_erased: leadsErased },
            },
          ]
        : []),
    ],
    subjects: people.map((person) => person.subject),
    phones: people.flatMap((person) => (person.phone.startsWith('erased:') ? [] : [person.phone])),
    leadIds: people.flatMap((person) => (person.leadId ? [person.leadId] : [])),
    erasedAt,
    leadsErased,
  };
}
