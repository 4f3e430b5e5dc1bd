import type { ChecklistEntry } from '@leadline/domain';
import type { CollectedItem, Responder, TurnInput, TurnProposal } from './turn';
import { validateValue, type ValueType } from './validate';

/**
 * The deterministic stand-in for the model when no OPENAI_API_KEY is set, so the product works end to
 * end on one machine: it extracts typed values from the lead's text, matches attachments to document
 * items, asks for the next missing required item by name, thanks the lead when the checklist is
 * complete, and hands off when the lead asks for a person.
 */

const personPattern =
  /\b(human|real person|a person|someone|agent|representative|speak (to|with)|talk (to|with)|call me)\b/i;
// An address starts where a word does (the lookbehind): without it, a long run of text with no "@"
// in it was scanned to its end again from every one of its characters, quadratic in the message.
const emailPattern = /(?<![^\s@<>()])[^\s@<>()]+@[^\s@<>()]+\.[^\s@<>()]+/g;
const isoDatePattern = /\b(\d{4})-(\d{1,2})-(\d{1,2})\b/g;
const usDatePattern = /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/g;
const phonePattern = /(?:\+?1[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}\b/g;
const numberPattern = /\$?\d[\d,]*(?:\.\d+)?/g;

const pad = (value: string) => value.padStart(2, '0');

/** Candidate values of each type in the text, each span used once (a date is not also a number). */
function extractCandidates(text: string): Record<Exclude<ValueType, 'text'>, string[]> {
  let rest = text;
  const take = (pattern: RegExp, map: (match: RegExpExecArray) => string) => {
    const found: string[] = [];
    rest = rest.replace(pattern, (...args) => {
      const match = args.slice(0, -2) as unknown as RegExpExecArray;
      found.push(map(match));
      return ' ';
    });
    return found;
  };
  const email = take(emailPattern, (match) => match[0]!.replace(/[.,;:!?]+$/, ''));
  const date = [
    ...take(isoDatePattern, (match) => `${match[1]}-${pad(match[2]!)}-${pad(match[3]!)}`),
    ...take(usDatePattern, (match) => `${match[3]}-${pad(match[1]!)}-${pad(match[2]!)}`),
  ];
  const phone = take(phonePattern, (match) => match[0]!);
  const number = take(numberPattern, (match) => match[0]!.replace(/[.,]+$/, ''));
  return { email, date, phone, number };
}

const missingRequired = (checklist: readonly ChecklistEntry[], done: ReadonlySet<string>) =>
  checklist.filter((item) => item.required && item.collected === null && !done.has(item.requirement_id));

export function askFor(item: ChecklistEntry): string {
  return item.type === 'document'
    ? `Could you send a photo or PDF of your ${item.name}?`
    : `Could you send me your ${item.name}?`;
}

/** The offline summary: who said what last, what is collected and what is missing. */
export function offlineSummary(
  input: Pick<TurnInput, 'checklist' | 'burst'>,
  collected: readonly CollectedItem[],
  handoff: string | null,
): string {
  const now = new Map(collected.map((item) => [item.requirement_id, item]));
  const have = input.checklist.filter((item) => item.collected !== null || now.has(item.requirement_id));
  const missing = input.checklist.filter((item) => item.collected === null && !now.has(item.requirement_id));
  const describe = (item: ChecklistEntry) => {
    const fresh = now.get(item.requirement_id);
    const value = fresh ? (fresh.attachment ? 'document' : fresh.value) : item.collected;
    return `${item.name} (${value})`;
  };
  const last = input.burst.at(-1)?.body.trim();
  return [
    last ? `Lead's latest message: "${last.length > 120 ? `${last.slice(0, 117)}...` : last}".` : null,
    `Collected: ${have.length ? have.map(describe).join(', ') : 'nothing yet'}.`,
    missing.length ? `Missing: ${missing.map((item) => item.name).join(', ')}.` : 'Checklist complete.',
    handoff ? `Handoff requested: ${handoff}.` : null,
  ]
    .filter(Boolean)
    .join(' ');
}

export function offlineTurn(input: TurnInput): TurnProposal {
  const text = input.burst.map((message) => message.body).join('\n');
  const collected = new Map<string, CollectedItem>();
  const pending = input.checklist.filter((item) => item.collected === null);
  // The item the previous message asked for: the first missing required item.
  const askedFor = missingRequired(input.checklist, new Set())[0];

  if (input.instructions === null && personPattern.test(text)) {
    const handoff = 'lead_asked_for_person';
    return {
      reply: `Of course. Someone from ${input.company} will follow up with you shortly.`,
      collected: [],
      handoff,
      optOut: null,
      summary: offlineSummary(input, [], handoff),
    };
  }

  const candidates = extractCandidates(text);
  let invalid: string | null = null;
  for (const type of ['email', 'date', 'phone', 'number'] as const) {
    const ofType = pending.filter((item) => item.type === type);
    // The asked-for item takes the first value of its type; the others follow in checklist order.
    const items =
      askedFor && ofType.includes(askedFor)
        ? [askedFor, ...ofType.filter((item) => item !== askedFor)]
        : ofType;
    for (const [index, item] of items.entries()) {
      const raw = candidates[type][index];
      if (raw === undefined) break;
      const result = validateValue(type, raw);
      if (result.ok)
        collected.set(item.requirement_id, {
          requirement_id: item.requirement_id,
          value: result.value,
          attachment: null,
        });
      else invalid ??= `That ${item.name} doesn't look right. ${askFor(item)}`;
    }
  }
  if (askedFor?.type === 'text' && text.trim() && !text.trim().endsWith('?')) {
    const result = validateValue('text', text);
    if (result.ok)
      collected.set(askedFor.requirement_id, {
        requirement_id: askedFor.requirement_id,
        value: result.value,
        attachment: null,
      });
  }

  const documents = pending.filter((item) => item.type === 'document');
  const unmatched = [...input.attachments];
  for (const attachment of input.attachments) {
    const haystack = `${text}\n${attachment.text ?? ''}`.toLowerCase();
    const named = documents.find(
      (item) => !collected.has(item.requirement_id) && haystack.includes(item.name.toLowerCase()),
    );
    if (named) {
      collected.set(named.requirement_id, { requirement_id: named.requirement_id, value: null, attachment });
      unmatched.splice(unmatched.indexOf(attachment), 1);
    }
  }
  const stillPending = documents.filter((item) => !collected.has(item.requirement_id));
  if (unmatched.length === 1 && stillPending.length === 1) {
    collected.set(stillPending[0]!.requirement_id, {
      requirement_id: stillPending[0]!.requirement_id,
      value: null,
      attachment: unmatched[0]!,
    });
  }

  const items = [...collected.values()];
  const next = missingRequired(input.checklist, new Set(collected.keys()))[0];
  const name = input.leadFirstName ? ` ${input.leadFirstName}` : '';
  let reply: string;
  if (input.instructions !== null) {
    reply = next
      ? `Hi${name}, it's ${input.company}. ${askFor(next)}`
      : `Hi${name}, it's ${input.company}, just checking in. Reply any time if you have questions.`;
  } else if (invalid && items.length === 0) {
    reply = invalid;
  } else if (next) {
    reply = `${items.length > 0 ? 'Thanks! ' : ''}${askFor(next)}`;
  } else if (items.length > 0 || input.checklist.length === 0) {
    reply = `Thank you! We have everything we need. ${input.company} will be in touch soon.`;
  } else {
    reply = `Thanks for your message! Someone from ${input.company} will get back to you if anything else is needed.`;
  }
  // Revocations in words never reach it: the messaging decider's rules took them first.
  return {
    reply,
    collected: items,
    handoff: null,
    optOut: null,
    summary: offlineSummary(input, items, null),
  };
}

export const offlineResponder: Responder = {
  name: 'offline',
  respond: async (input) => offlineTurn(input),
};
