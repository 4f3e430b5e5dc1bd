import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { RegistrationStatus } from './state';

/**
 * Whether a number is a US long code (10DLC), the kind of number the carriers' A2P registration
 * governs. Toll-free numbers have their own verification, short codes their own program, and other
 * countries of the +1 plan (Canada, the Caribbean) their own carriers. The fictional 555 range the
 * local provider hands out counts as a US long code, so a local setup shows the rule at work.
 */
export function isUsLongCode(phone: string): boolean {
  if (!/^\+1\d{10}$/.test(phone)) return false;
  const parsed = parsePhoneNumberFromString(phone);
  if (!parsed || parsed.getType() === 'TOLL_FREE') return false;
  return parsed.country === undefined || parsed.country === 'US';
}

/** The one reason the registration rule holds a message. */
export type RegistrationHoldReason = 'registration_pending';

export interface RegistrationRuleState {
  /** Whether the rule is enforced at all (configuration: on in production with Twilio). */
  enforced: boolean;
  /** The status of the account's campaign; undefined when it never submitted a registration. */
  campaignStatus: RegistrationStatus | undefined;
  /** The number the message would leave from. */
  from: string;
}

export interface OutgoingMessage {
  source: 'manual' | 'sequence' | 'ai' | 'system';
  /** For a `system` message, the keyword it answers: the confirmation of an opt-out, a HELP answer... */
  answers?: 'opt_out' | 'opt_in' | 'help' | undefined;
}

/**
 * The carriers' sending rule: before an account's campaign is approved, nothing leaves its US long
 * code but the confirmation of an opt-out and the answer to HELP, which a person is owed whatever the
 * state of the sender's paperwork. Anything else is held (`registration_pending`) until the campaign is
 * approved; a system message that does not say what it answers is held too, since it may be neither.
 * Returns null when the message may go.
 */
export function registrationHold(
  rule: RegistrationRuleState,
  message: OutgoingMessage,
): RegistrationHoldReason | null {
  if (!rule.enforced || rule.campaignStatus === 'approved' || !isUsLongCode(rule.from)) return null;
  if (message.source === 'system' && (message.answers === 'opt_out' || message.answers === 'help'))
    return null;
  return 'registration_pending';
}
