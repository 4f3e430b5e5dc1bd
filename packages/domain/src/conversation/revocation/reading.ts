/**
 * How the revocation rules read a message: the vocabulary they share, a message cut into clauses of
 * words, and what stands before a verb. See `../revocation.ts` for what the rules catch and why.
 */

export type Words = ReadonlySet<string>;
export const words = (list: string): Words => new Set(list.split(/\s+/).filter(Boolean));

/** The most words a rule looks past between its anchor and what completes it. */
export const MAX_GAP = 6;

// ---------------------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------------------

/** What is being sent: a stop or a refusal about one of these is about contact. */
export const contactNouns = words(`
  text texts txt txts texting message messages msg msgs messaging sms smss mms calls emails
  notifications alerts reminders promos promotions offers ads advertising marketing spam junk
  solicitations robotexts contact communication communications correspondence subscription subscriptions
  mensaje mensajes mensajito mensajitos msj msjs textos texto notificaciones recordatorios promociones
  ofertas publicidad llamadas correos whatsapps contacto suscripcion subscripcion`);

/** Sending actions, as "stop ___": "stop texting", "quit messaging". */
export const sendingGerunds = words(`
  texting txting texing messaging msging contacting calling emailing spamming bothering harassing
  harrassing pestering hounding`);

/** Receiving, as "stop ___ (texts)": said by the lead about themselves, still a revocation. */
export const receivingGerunds = words('receiving getting');

/** What "stop sending" must be followed by to be about messages to the lead ("stop sending me…"). */
export const sendObjects = words(`
  me us texts text messages message msgs sms these this crap junk stuff spam promos ads offers anything`);

/** Words a stop may run through before its object: "stop all of these messages", "quit f***ing texting". */
export const stopFillers = words(`
  all the these those this your ur with any further future more of
  f ing fing fn fucking fuckin freaking freakin frigging friggin effing damn goddamn bloody stupid
  annoying constant
  los las sus tus estos esos todos todas de con mas el`);

/**
 * Words that may stand between a verb and whoever asks for it without changing who acts: "please just
 * stop", "can you stop", "I want you to stop", "por favor ya dejen de".
 */
const modifiers = words(`
  please pls plz kindly just ever now already to can could will would should must may might gotta
  have has need needs wanna gonna going really seriously simply immediately also finally and so mean
  meant
  por favor porfa porfavor ya solo que pueden puede podrian podria podrias puedes a me nos`);

/** Verbs that hand an action to "you": "I want you to stop", "I told you to stop". */
const askVerbs = words(`
  want wanted need needed like asked ask told tell telling asking begging beg
  quiero quisiera deseo necesito pido pedi`);

export const englishNegators = words('dont not never didnt doesnt shouldnt longer');
export const spanishNegators = words('no nunca jamas');

export const firstPerson = words('i we ill id im ive weve wed lets');
export const secondPerson = words('you u yall');
/** "did you stop texting me?" asks what happened, it does not ask for anything. */
export const pastQuestion = words('did do does didnt doesnt when have has');
/**
 * Subjects that make a negated verb a statement or a question, not a prohibition: "you never text me
 * back", "why not text me instead?". A prohibition has none: "don't text me".
 */
export const statementSubjects = words(
  'i we you u they he she it yall im ill id why how what when where who',
);

/** Said after "don't text me", these make it about one message or a time, not about all contact. */
export const englishDeferrals = words(`
  back until till til before after yet tonight today tomorrow during while
  the a an that it those them this your his her its`);
export const spanishDeferrals = words(
  'hasta antes despues todavia aun manana hoy el la los las ese esa eso este esta',
);

/** What a prohibition may be about: "don't text me", "do not message this number", "never … again". */
export const prohibitionObjects = words('me us here again anymore ever');

/** Courtesy and intensity that do not change what a short clause asks: "stop please", "stop it now!!". */
export const courtesy = words(`
  please pls plz plx kindly now already thanks thank thx ty you u ok okay just seriously immediately
  asap right lol ugh omg dude man bro sir maam hey hi hello
  por favor porfa porfavor gracias ya oye hola`);

// ---------------------------------------------------------------------------------------------------
// Reading a message
// ---------------------------------------------------------------------------------------------------

/**
 * The message's clauses, each as its words. Clause breaks are sentence punctuation, commas and dashes
 * between spaces, so "Don't stop, I'm interested" is two clauses and the negation stays with its verb.
 */
export function clausesOf(body: string): string[][] {
  return (
    body
      // "don't", "I'm", "can’t", "don´t": one word each, as typed without the apostrophe (before the
      // accents are dropped, which would leave "´" a space).
      .replace(/['’‘ʼ`´]/gu, '')
      .normalize('NFKD')
      .replace(/\p{M}/gu, '')
      .toLowerCase()
      .split(/[.!?;,:…\n\r()[\]{}"“”«»¡¿—–|/]+|\s-+\s/u)
      .map((clause) => clause.split(/[^\p{L}\p{N}]+/u).filter(Boolean))
      .filter((clause) => clause.length > 0)
  );
}

/** From `start`, past at most `max` words of `skippable`: the index of the first word that is not. */
export function skip(tokens: readonly string[], start: number, skippable: Words, max = MAX_GAP): number {
  let index = start;
  while (index < tokens.length && index - start < max && skippable.has(tokens[index]!)) index++;
  return index;
}

/** Whether the clause ends at `start` but for a few courtesy words: "remove me", "remove me please". */
export const restIsCourtesy = (tokens: readonly string[], start: number) =>
  skip(tokens, start, courtesy) === tokens.length;

export interface Frame {
  /** A negation stands before the verb: "don't stop", "never text", "no dejen de". */
  negated: boolean;
  /** The negation is an imperative's ("don't", "do not", "never"), not a statement's ("did not"). */
  forbids: boolean;
  /** The verb is handed to "you" by an ask verb: "I want you to stop", "I told you to stop". */
  handedToYou: boolean;
  /** The first word before the verb's modifiers (its subject, when it has one). */
  subject: string | undefined;
  /** The word before that. */
  before: string | undefined;
}

/**
 * What stands before the verb at `verb`: walking back over modifiers, negations and ask verbs (at most
 * MAX_GAP words), whether it is negated, handed to "you", and who its subject is.
 */
export function frameOf(tokens: readonly string[], verb: number, negators: Words): Frame {
  let index = verb - 1;
  let negated = false;
  let forbids = false;
  let handedToYou = false;
  for (let steps = 0; index >= 0 && steps < MAX_GAP; steps++, index--) {
    const word = tokens[index]!;
    if (negators.has(word)) {
      negated = true;
      forbids ||= word === 'dont' || word === 'never' || (word === 'not' && tokens[index - 1] === 'do');
    } else if (secondPerson.has(word) && index > 0 && askVerbs.has(tokens[index - 1]!)) handedToYou = true;
    else if (!modifiers.has(word) && !askVerbs.has(word)) break;
  }
  return { negated, forbids, handedToYou, subject: tokens[index], before: tokens[index - 1] };
}

/** A rule anchored on a word of a clause; `match` looks a bounded number of words around it. */
export interface Rule {
  name: string;
  anchors: Words;
  match(tokens: readonly string[], at: number): boolean;
}
