import type { NewEvent } from '@leadline/events';
import { notFound } from '../errors';

/** What the account holds of one phone when a partner asks to erase it. */
export interface ErasureState {
  phone: string;
  /** The keyed hash naming the person (the runtime's `subjectOf(account, 'lead', phone)`). */
  subject: string;
  /** The phone's lead, if it still has one. */
  leadId: string | null;
  /** Anything left to erase: a lead, a conversation, or personal data sealed under a live key. */
  holdsData: boolean;
  /** When the subject was last erased, if ever: a repeated request is answered with it. */
  erasedAt: Date | null;
}

export type ErasureDecision =
  { action: 'erase'; events: NewEvent[] } | { action: 'already_erased'; events: []; erasedAt: Date };

/**
 * Erasing a person (a privacy request): `lead.erased` when the account holds anything of the phone.
 * Asking again once nothing is left is answered as done (the request is idempotent), from the erased
 * keys that stay as the tombstone; a phone the account never had is a 404, so the route does not
 * confirm an erasure of data that never existed.
 */
export function decideErasure(state: ErasureState): ErasureDecision {
  if (state.holdsData) {
    return {
      action: 'erase',
      events: [
        { type: 'lead.erased', data: { lead_id: state.leadId, phone: state.phone, subject: state.subject } },
      ],
    };
  }
  if (state.erasedAt) return { action: 'already_erased', events: [], erasedAt: state.erasedAt };
  throw notFound('lead');
}
