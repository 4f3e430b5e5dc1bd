import { leadName, type EventData, type NewEvent } from '@leadline/events';
import { conflict, notFound } from '../errors';
import { decideLeadImports } from '../lead/decide';
import type { Lead } from '../lead/state';
import { freeTextRevocation } from './revocation';

/**
 * Carrier (CTIA) keywords and the words the FCC's 2024 order names as a reasonable revocation in reply
 * to a text, in their folded form (see `fold`): "opt out", "Opt-out" and "OPTOUT" are one keyword.
 */
const optOutKeywords = new Set([
  'STOP',
  'STOPALL',
  'UNSUBSCRIBE',
  'CANCEL',
  'END',
  'QUIT',
  'REVOKE',
  'OPTOUT',
]);
const optInKeywords = new Set(['START', 'UNSTOP', 'YES']);
const helpKeywords = new Set(['HELP']);

/** Courtesy around a keyword that does not change what it asks: "please stop", "unsubscribe me". */
const leadingCourtesy = new Set(['PLEASE', 'PLS', 'PLZ']);
const trailingCourtesy = new Set(['PLEASE', 'PLS', 'PLZ', 'NOW', 'ME', 'THANKS', 'THX']);

/**
 * A message as a keyword would read it: upper case, accents dropped, every run of punctuation,
 * emoji or spacing one space ("Stop.", "STOP!!" and " stop " all read STOP), and courtesy words
 * around it left out. Joined without spaces, so "opt out", "opt-out" and "stop all" read as the
 * keywords OPTOUT and STOPALL.
 */
function fold(body: string): string {
  const words = body
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  while (words.length > 1 && leadingCourtesy.has(words[0]!)) words.shift();
  while (words.length > 1 && trailingCourtesy.has(words.at(-1)!)) words.pop();
  return words.join('');
}

export type Keyword = { kind: 'opt_out' | 'opt_in' | 'help'; word: string };

/**
 * The keyword a message is, if the whole message is one (in any case, with punctuation, spacing and
 * courtesy around it); a message that only contains one ("stop by the office?") is an ordinary reply.
 * `word` is the keyword as listed above, so the log records what was matched, not how it was typed.
 */
export function keywordOf(body: string): Keyword | undefined {
  const word = fold(body);
  if (optOutKeywords.has(word)) return { kind: 'opt_out', word };
  if (optInKeywords.has(word)) return { kind: 'opt_in', word };
  if (helpKeywords.has(word)) return { kind: 'help', word };
  return undefined;
}

/**
 * How a message opts its sender out, if it does: an opt-out keyword (the whole message), or a request
 * in words not to be contacted any more (`freeTextRevocation`), which is honoured exactly as STOP is.
 * `keyword` is what the log records: the keyword as listed, or the name of the free-text rule that
 * matched. START and HELP are keywords only: a message that is one of them is never a revocation.
 */
export interface OptOutRequest {
  method: 'keyword' | 'free_text';
  keyword: string;
}

export function optOutOf(body: string): OptOutRequest | undefined {
  const keyword = keywordOf(body);
  if (keyword) return keyword.kind === 'opt_out' ? { method: 'keyword', keyword: keyword.word } : undefined;
  const rule = freeTextRevocation(body);
  return rule === undefined ? undefined : { method: 'free_text', keyword: rule };
}

/** `lead.opted_out`: the same event whichever way the lead asked (keyword, free text, the AI's tool). */
export function optedOutEvent(
  ref: { phone: string; lead_id: string | null; lead_name: string | null },
  how: Omit<EventData<'lead.opted_out'>, 'phone' | 'lead_id' | 'lead_name'>,
): NewEvent {
  return { type: 'lead.opted_out', data: { ...ref, ...how } };
}

/** A compliance reply: `source: system`, the only kind of message an opted-out number still gets. */
export function complianceReply(
  kind: Keyword['kind'],
  phone: string,
  company: string,
  messageId: string,
): NewEvent {
  return {
    type: 'message.outbound_requested',
    data: {
      message_id: messageId,
      phone,
      body: complianceReplies[kind](company),
      source: 'system',
      sender_name: null,
      // The gateway lets an opt-out confirmation and a HELP answer out before carrier registration, and
      // drops an opt-out confirmation it could not send within five minutes.
      answers: kind,
    },
  };
}

/** The compliance replies; each names the company, as carriers require. */
export const complianceReplies = {
  opt_out: (company: string) =>
    `${company}: You are unsubscribed and will receive no more messages. Reply START to resubscribe.`,
  opt_in: (company: string) =>
    `${company}: You are resubscribed and will receive messages again. Reply STOP to unsubscribe.`,
  help: (company: string) =>
    `${company}: Reply STOP to unsubscribe, START to resubscribe. Msg & data rates may apply.`,
};

/** What deciding about a conversation reads: the account, the conversation (if any) and the lead (if any). */
export interface ConversationState {
  account: { status: 'active' | 'deactivated'; company_name: string; ai_pause_minutes: number };
  conversation:
    | { started: boolean; opted_out: boolean; needs_handoff: boolean; ai_paused_until: Date | null }
    | undefined;
  lead: Lead | undefined;
  /**
   * An opt-out was answered to Twilio and its decision is still queued (the inbound decider has not
   * applied it yet): sends are refused as if `conversation.opted_out` were set. Required, so no new
   * send path can be built without it. Deciding the inbound message itself does not read it: that
   * decision is the one the guard waits for, and must see the projected state alone.
   */
  optOutPending: boolean;
}

/** The AI answers unless a manual message paused it and the pause has not ended (resume-ai or timeout). */
export const aiPaused = (conversation: { ai_paused_until: Date | null } | undefined, now: Date) =>
  conversation?.ai_paused_until != null && conversation.ai_paused_until.getTime() > now.getTime();

const leadRef = (phone: string, lead: Lead | undefined) => ({
  phone,
  lead_id: lead?.lead_id ?? null,
  lead_name: leadName(lead),
});

export interface SendMessage {
  type: 'SendMessage';
  message_id: string;
  phone: string;
  body: string;
  source: 'manual' | 'sequence' | 'ai';
  sender_name: string | null;
  /** For a sequence step: which one, so the sequencer can advance the enrollment from the log. */
  sequence_step?: EventData<'message.outbound_requested'>['sequence_step'];
}

/**
 * Every path that sends (manual now; sequences and the AI later) asks here first: an opted-out
 * number and a deactivated account get nothing. A manual message pauses the AI for the account's
 * `ai_pause_minutes` and clears the handoff flag. The first outbound message moves a `new` lead to
 * `contacted` (statuses never move back automatically).
 */
export function decideSendMessage(command: SendMessage, state: ConversationState, now: Date): NewEvent[] {
  const { account, conversation, lead } = state;
  if (!lead && !conversation) throw notFound('lead');
  if (account.status === 'deactivated') {
    throw conflict('account_deactivated', 'The account is deactivated; reactivate it to send messages.');
  }
  if (conversation?.opted_out || state.optOutPending) {
    throw conflict(
      'lead_opted_out',
      'This number opted out (it texted STOP or asked not to be contacted); it can opt back in with START.',
    );
  }
  const events: NewEvent[] = [];
  if (!conversation?.started) {
    events.push({
      type: 'conversation.started',
      data: {
        ...leadRef(command.phone, lead),
        message_id: command.message_id,
        direction: 'outbound',
        message_body: command.body,
        message_source: command.source,
      },
    });
  }
  events.push({
    type: 'message.outbound_requested',
    data: {
      message_id: command.message_id,
      phone: command.phone,
      body: command.body,
      source: command.source,
      sender_name: command.sender_name,
      ...(command.sequence_step && { sequence_step: command.sequence_step }),
    },
  });
  if (command.source === 'manual') {
    const pausedUntil = new Date(now.getTime() + account.ai_pause_minutes * 60_000);
    events.push({
      type: 'conversation.ai_paused',
      data: { phone: command.phone, paused_until: pausedUntil.toISOString(), reason: 'manual_message' },
    });
    if (conversation?.needs_handoff) {
      events.push({
        type: 'conversation.handoff_cleared',
        data: { phone: command.phone, reason: 'manual_message' },
      });
    }
  }
  if (lead?.status === 'new') {
    events.push({
      type: 'lead.status_changed',
      data: { lead_id: lead.lead_id, phone: lead.phone, previous_status: 'new', new_status: 'contacted' },
    });
  }
  return events;
}

/** resume-ai: idempotent; ends a running pause and clears the handoff flag. */
export function decideResumeAi(phone: string, state: ConversationState, now: Date): NewEvent[] {
  if (!state.lead && !state.conversation) throw notFound('lead');
  const events: NewEvent[] = [];
  if (aiPaused(state.conversation, now)) events.push({ type: 'conversation.ai_resumed', data: { phone } });
  if (state.conversation?.needs_handoff) {
    events.push({ type: 'conversation.handoff_cleared', data: { phone, reason: 'ai_resumed' } });
  }
  return events;
}

export interface ReceiveMessage {
  type: 'ReceiveMessage';
  message_id: string;
  phone: string;
  to: string;
  body: string;
  provider_message_id: string;
  media: EventData<'message.received'>['media'];
}

/**
 * An inbound SMS. The provider's message id was not seen before (the caller checked, under the
 * account's lock). An unknown sender becomes a lead through the import rules (origin
 * `inbound_message`). Keywords: an opt-out is recorded and confirmed once; an opt-in only undoes an
 * opt-out; HELP is always answered. A request in words not to be contacted (`optOutOf`) is an opt-out
 * like STOP. A deactivated account keeps the messages and honours opt-outs but sends nothing.
 */
export function decideReceiveMessage(
  command: ReceiveMessage,
  state: ConversationState,
  context: { newId: () => string; now: Date },
): NewEvent[] {
  const { account, conversation } = state;
  const events: NewEvent[] = [];
  let lead = state.lead;
  if (!lead) {
    const decision = decideLeadImports([{ phone: command.phone, auto_sequence: false }], [], {
      ...context,
      origin: 'inbound_message',
    });
    events.push(...decision.events);
    lead = decision.outcomes[0]!.lead;
  }
  const ref = leadRef(command.phone, lead);
  if (!conversation?.started) {
    events.push({
      type: 'conversation.started',
      data: {
        ...ref,
        message_id: command.message_id,
        direction: 'inbound',
        message_body: command.body,
        message_source: null,
      },
    });
  }
  const { type: _type, ...message } = command;
  events.push({ type: 'message.received', data: message });
  events.push({
    type: 'conversation.reply_received',
    data: {
      ...ref,
      message_id: command.message_id,
      message_body: command.body,
      message_direction: 'inbound',
    },
  });

  const keyword = keywordOf(command.body);
  const optedOut = conversation?.opted_out ?? false;
  const reply = (kind: Keyword['kind']) => {
    if (account.status === 'deactivated') return;
    events.push(complianceReply(kind, command.phone, account.company_name, context.newId()));
  };
  if (!keyword) {
    const rule = freeTextRevocation(command.body);
    if (rule !== undefined && !optedOut) {
      events.push(optedOutEvent(ref, { method: 'free_text', keyword: rule, message_id: command.message_id }));
      reply('opt_out');
    }
    return events;
  }
  switch (keyword.kind) {
    case 'opt_out':
      if (optedOut) break;
      events.push(
        optedOutEvent(ref, { method: 'keyword', keyword: keyword.word, message_id: command.message_id }),
      );
      reply('opt_out');
      break;
    case 'opt_in':
      if (!optedOut) break;
      events.push({
        type: 'lead.opted_in',
        data: { ...ref, keyword: keyword.word, message_id: command.message_id },
      });
      reply('opt_in');
      break;
    case 'help':
      reply('help');
      break;
    default: {
      const unknownKind: never = keyword.kind;
      throw new Error(`Unknown keyword ${String(unknownKind)}`);
    }
  }
  return events;
}
