/**
 * Revocation of consent in the lead's own words (the FCC's 2024 order: "by any reasonable means"), in
 * English and Spanish, for messages that are not an opt-out keyword: "please stop texting me", "take
 * me off your list", "no más mensajes", "dejen de enviarme mensajes". Deterministic and explainable:
 * every rule below is a short phrase shape with a comment saying what it catches and what it leaves
 * alone, so a compliance reviewer can tell why a message did or did not opt its sender out.
 *
 * How it reads a message: accents dropped, lower case, apostrophes removed ("don't" reads `dont`),
 * cut into clauses at sentence punctuation, each clause a list of words. Each rule is anchored on one
 * word (looked up in a map) and looks at most a few words around it, so a message is read in time
 * linear in its length whatever it holds: there is no regular expression with nested repetition
 * (which can take exponential time) and no rule scans the rest of the message.
 *
 * Which way it leans: a message that clearly asks not to be contacted any more is a revocation however
 * it is put (politely, angrily, as a question "can you stop texting me?", or only for a place or a
 * time: "stop texting me at work" cannot be honoured in part, so it is honoured whole); a message that
 * only uses the words about something else is not ("stop by the office?", "can I stop the W-2
 * upload?", "I want to cancel my appointment", "don't stop, I'm interested"), nor one that asks about
 * one message or its timing ("don't text me back", "don't text me before 9am"). What the rules cannot
 * tell, the AI agent's model can (its `record_opt_out` tool).
 */

import { MAX_GAP, type Rule, clausesOf, courtesy, words } from './revocation/reading';
import {
  endContact,
  englishProhibition,
  refuseMessages,
  spanishProhibition,
  spanishStop,
  stopContact,
} from './revocation/contact-rules';
import {
  ceaseAndDesist,
  doNotContactList,
  enough,
  leaveMeAlone,
  noMore,
  optOut,
  removeFromList,
  revokeConsent,
  spanishCancel,
  spanishUnsubscribe,
  unsubscribe,
  wrongNumber,
} from './revocation/list-rules';

const rules: readonly Rule[] = [
  stopContact,
  endContact,
  englishProhibition,
  spanishProhibition,
  spanishStop,
  refuseMessages,
  removeFromList,
  optOut,
  unsubscribe,
  spanishUnsubscribe,
  spanishCancel,
  revokeConsent,
  noMore,
  enough,
  leaveMeAlone,
  ceaseAndDesist,
  doNotContactList,
  wrongNumber,
];

/** Each anchor word to the rules it starts. */
const rulesByAnchor = new Map<string, Rule[]>();
for (const rule of rules) {
  for (const anchor of rule.anchors) rulesByAnchor.set(anchor, [...(rulesByAnchor.get(anchor) ?? []), rule]);
}

// ---------------------------------------------------------------------------------------------------
// Short clauses and short messages
// ---------------------------------------------------------------------------------------------------

/** A clause of only these words (besides courtesy) is an opt-out: "Stop. I'm not interested.", "STOP STOP". */
const stopWords = words('stop stopp stahp stopall unsubscribe unsub optout');

/** Short clauses that ask to be left alone whatever surrounds them (courtesy left out). */
const standaloneClauses = words(
  [
    'stop it',
    'stop this',
    'stop that',
    'stop all',
    'opt out',
    'remove me',
    'take me off',
    'leave me alone',
    'go away',
    'fuck off',
    'f off',
    'piss off',
    'get lost',
    'buzz off',
    'no more',
    'no contact',
    'no texts',
    'no messages',
    'no mensajes',
    'enough already',
    'basta',
    'no mas',
    'sacame',
    'saquenme',
    'quitame',
    'quitenme',
    'borrame',
    'borrenme',
    'eliminame',
    'eliminenme',
    'no molestar',
  ]
    .map((phrase) => phrase.replaceAll(' ', '_'))
    .join(' '),
);

/**
 * Opt-out words that are ordinary words in a sentence ("la tasa baja", "un alto costo", "para mañana",
 * "remove the co-borrower"): an opt-out only as the whole message, and not as a question ("¿Para?").
 */
const wholeMessageWords = words(
  'baja alto parar para detener detente detengan cancelar cancela cancelen fin remove',
);

/** Words that only insist before a lone stop: "I said stop", "I told you to stop", "I already said stop". */
const insistence = words('i said told you u to asked already again ive im saying say');

/** A clause before a lone "stop" that makes it a correction ("wait, stop, I sent the wrong file"). */
const corrections = words(['wait', 'hold_on', 'hang_on', 'oops', 'sorry', 'no_wait', 'wait_wait'].join(' '));

/** The clause without courtesy words, joined by `_` (empty when only courtesy). */
const core = (tokens: readonly string[]) => tokens.filter((word) => !courtesy.has(word)).join('_');

/** A clause that is a stop and nothing else: "Stop.", "STOP STOP", "I said stop", "stop now!". */
function isStopClause(phrase: string): boolean {
  const clause = phrase.split('_');
  let end = clause.length;
  while (end > 0 && stopWords.has(clause[end - 1]!)) end--;
  if (end === clause.length) return false;
  // Bounded like the rules: a long clause that ends in "stop" is not a short one.
  return end <= MAX_GAP && clause.slice(0, end).every((word) => insistence.has(word));
}

function shortFormOf(body: string, clauses: readonly string[][]): string | undefined {
  if (clauses.length === 1 && wholeMessageWords.has(core(clauses[0]!)) && !/[?¿]/.test(body))
    return 'short_form';
  for (const [index, tokens] of clauses.entries()) {
    const phrase = core(tokens);
    if (phrase === '') continue;
    if (isStopClause(phrase)) {
      const previous = index > 0 ? clauses[index - 1]!.join('_') : '';
      if (!corrections.has(previous)) return 'stop_clause';
    }
    if (standaloneClauses.has(phrase)) return 'short_form';
  }
  return undefined;
}

/**
 * The rule by which a message, in words, asks not to be contacted any more, or undefined when it does
 * not. Keywords are not this function's (see `keywordOf`): the caller asks it about a message that is
 * not one.
 */
export function freeTextRevocation(body: string): string | undefined {
  const clauses = clausesOf(body);
  const short = shortFormOf(body, clauses);
  if (short) return short;
  for (const tokens of clauses) {
    for (let at = 0; at < tokens.length; at++) {
      const candidates = rulesByAnchor.get(tokens[at]!);
      if (!candidates) continue;
      for (const rule of candidates) if (rule.match(tokens, at)) return rule.name;
    }
  }
  return undefined;
}
