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

export type AccountErasureDecision =
  /** Some people erased now; the request goes on with another command once they are projected. */
  | { action: 'erase'; events: NewEvent[]; subjects: string[]; phones: string[]; leadIds: string[] }
  /** Nobody left: `account.erased`, and every key of the account is destroyed with it. */
  | { action: 'finish'; events: NewEvent[]; erasedAt: Date; leadsErased: number }
  /** Erased before, and nothing has appeared since: answered as done, nothing appended. */
  | { action: 'already_erased'; events: []; erasedAt: Date; leadsErased: number };

/**
 * Erasing an account (a privacy request for everyone it holds), one command at a time: the first
 * deactivates it (as a deactivation would), each appends `lead.erased` for up to `batchSize` people,
 * and the one that finds nobody left appends `account.erased`. `erasedNow` counts the people the
 * request erased in its earlier commands; a request repeated after the erasure erases what appeared
 * since and keeps the first erasure's time.
 */
export function decideAccountErasure(
  state: AccountErasureState,
  { now, batchSize, erasedNow }: { now: Date; batchSize: number; erasedNow: number },
): AccountErasureDecision {
  const deactivation: NewEvent[] =
    state.status === 'active' ? [{ type: 'account.deactivated', data: {} }] : [];
  const people = [
    ...state.people,
    ...state.keyOnlySubjects.map((subject) => ({ phone: `erased:${subject}`, subject, leadId: null })),
  ].slice(0, batchSize);
  if (people.length > 0) {
    return {
      action: 'erase',
      events: [
        ...deactivation,
        ...people.map(({ phone, subject, leadId }): NewEvent => ({
          type: 'lead.erased',
          data: { lead_id: leadId, phone, subject },
        })),
      ],
      subjects: people.map((person) => person.subject),
      phones: people.flatMap((person) => (person.phone.startsWith('erased:') ? [] : [person.phone])),
      leadIds: people.flatMap((person) => (person.leadId ? [person.leadId] : [])),
    };
  }
  const leadsErased = state.leadsErased + erasedNow;
  if (state.erasedAt && erasedNow === 0 && deactivation.length === 0 && !state.holdsOtherPersonalData) {
    return { action: 'already_erased', events: [], erasedAt: state.erasedAt, leadsErased };
  }
  const erasedAt = state.erasedAt ?? now;
  return {
    action: 'finish',
    events: [
      ...deactivation,
      { type: 'account.erased', data: { erased_at: erasedAt.toISOString(), leads_erased: leadsErased } },
    ],
    erasedAt,
    leadsErased,
  };
}
