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

type Words = ReadonlySet<string>;
const words = (list: string): Words => new Set(list.split(/\s+/).filter(Boolean));

/** The most words a rule looks past between its anchor and what completes it. */
const MAX_GAP = 6;

// ---------------------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------------------

/** What is being sent: a stop or a refusal about one of these is about contact. */
const contactNouns = words(`
  text texts txt txts texting message messages msg msgs messaging sms smss mms calls emails
  notifications alerts reminders promos promotions offers ads advertising marketing spam junk
  solicitations robotexts contact communication communications correspondence subscription subscriptions
  mensaje mensajes mensajito mensajitos msj msjs textos texto notificaciones recordatorios promociones
  ofertas publicidad llamadas correos whatsapps contacto suscripcion subscripcion`);

/** Sending actions, as "stop ___": "stop texting", "quit messaging". */
const sendingGerunds = words(`
  texting txting texing messaging msging contacting calling emailing spamming bothering harassing
  harrassing pestering hounding`);

/** Receiving, as "stop ___ (texts)": said by the lead about themselves, still a revocation. */
const receivingGerunds = words('receiving getting');

/** What "stop sending" must be followed by to be about messages to the lead ("stop sending me…"). */
const sendObjects = words(`
  me us texts text messages message msgs sms these this crap junk stuff spam promos ads offers anything`);

/** Words a stop may run through before its object: "stop all of these messages", "quit f***ing texting". */
const stopFillers = words(`
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

const englishNegators = words('dont not never didnt doesnt shouldnt longer');
const spanishNegators = words('no nunca jamas');

const firstPerson = words('i we ill id im ive weve wed lets');
const secondPerson = words('you u yall');
/** "did you stop texting me?" asks what happened, it does not ask for anything. */
const pastQuestion = words('did do does didnt doesnt when have has');
/**
 * Subjects that make a negated verb a statement or a question, not a prohibition: "you never text me
 * back", "why not text me instead?". A prohibition has none: "don't text me".
 */
const statementSubjects = words('i we you u they he she it yall im ill id why how what when where who');

/** Said after "don't text me", these make it about one message or a time, not about all contact. */
const englishDeferrals = words(`
  back until till til before after yet tonight today tomorrow during while
  the a an that it those them this your his her its`);
const spanishDeferrals = words(
  'hasta antes despues todavia aun manana hoy el la los las ese esa eso este esta',
);

/** What a prohibition may be about: "don't text me", "do not message this number", "never … again". */
const prohibitionObjects = words('me us here again anymore ever');

/** Courtesy and intensity that do not change what a short clause asks: "stop please", "stop it now!!". */
const courtesy = words(`
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
function clausesOf(body: string): string[][] {
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
function skip(tokens: readonly string[], start: number, skippable: Words, max = MAX_GAP): number {
  let index = start;
  while (index < tokens.length && index - start < max && skippable.has(tokens[index]!)) index++;
  return index;
}

/** Whether the clause ends at `start` but for a few courtesy words: "remove me", "remove me please". */
const restIsCourtesy = (tokens: readonly string[], start: number) =>
  skip(tokens, start, courtesy) === tokens.length;

interface Frame {
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
function frameOf(tokens: readonly string[], verb: number, negators: Words): Frame {
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

// ---------------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------------

/** A rule anchored on a word of a clause; `match` looks a bounded number of words around it. */
interface Rule {
  name: string;
  anchors: Words;
  match(tokens: readonly string[], at: number): boolean;
}

/**
 * A request to stop sending: "stop texting me", "can you stop sending me these", "quit f***ing
 * messaging me", "stop all messages", "I want you to stop contacting me", "if you don't stop texting
 * me…". Not a request: "stop by the office", "can I stop the W-2 upload" (no contact object), "don't
 * stop texting me" (negated), "I'll stop texting you" / "can I stop sending documents?" (the lead's own
 * sending), "why did you stop texting me?" (a question about the past). The lead's own receiving is
 * theirs to stop: "I'd like to stop receiving these texts" is a revocation.
 */
const stopContact: Rule = {
  name: 'stop_contact',
  anchors: words('stop stopp stahp quit cease halt'),
  match(tokens, at) {
    const objectAt = skip(tokens, at + 1, stopFillers);
    const object = tokens[objectAt];
    if (object === undefined) return false;
    // Whether the stop is of the sender's own action (which the lead cannot be asking to stop).
    let sending: boolean;
    if (sendingGerunds.has(object)) sending = true;
    else if (object === 'sending') {
      // "stop sending me…", "stop sending these", "stop sending all these texts": sending needs a
      // recipient or a message as its object.
      const next = tokens[objectAt + 1];
      const what =
        next !== undefined && sendObjects.has(next) ? next : tokens[skip(tokens, objectAt + 1, stopFillers)];
      if (what === undefined || !sendObjects.has(what)) return false;
      sending = true;
    } else if (object === 'hitting' || object === 'reaching') {
      // "stop hitting me up", "stop reaching out".
      if (tokens[objectAt + 1] !== 'me' && tokens[objectAt + 1] !== 'out') return false;
      sending = true;
    } else if (receivingGerunds.has(object)) {
      // "stop getting these texts", "stop receiving these": what the lead receives.
      const what = tokens[skip(tokens, objectAt + 1, stopFillers)];
      const these = tokens[objectAt + 1] === 'these' || tokens[objectAt + 1] === 'this';
      if (what === undefined ? !these : !contactNouns.has(what)) return false;
      sending = false;
    } else if (contactNouns.has(object)) sending = false;
    else return false;
    return requested(frameOf(tokens, at, englishNegators), { ownAction: sending });
  },
};

/**
 * Whether a framed verb is asked of us. Negated, it is not ("don't stop"), except as a threat ("if you
 * don't stop texting me…"). Handed to "you", it is. With the lead as subject ("I'll stop texting",
 * "can I stop sending") it is the lead's own action, unless it is about what the lead receives. "did
 * you stop…?" asks about the past.
 */
function requested(frame: Frame, { ownAction }: { ownAction: boolean }): boolean {
  if (frame.negated) {
    return (
      frame.subject !== undefined &&
      secondPerson.has(frame.subject) &&
      (frame.before === 'if' || frame.before === 'unless')
    );
  }
  if (frame.handedToYou) return true;
  if (frame.subject === undefined) return true;
  if (ownAction && firstPerson.has(frame.subject)) return false;
  if (secondPerson.has(frame.subject) && frame.before !== undefined && pastQuestion.has(frame.before))
    return false;
  return true;
}

/**
 * "end all messages", "cancel these texts", "cancel my subscription": end or cancel with a contact
 * object. "when does the promo end?", "cancel my appointment", "cancel that" are not.
 */
const endFillers = words('all the these those this your ur my of any future further');
const endContact: Rule = {
  name: 'stop_contact',
  anchors: words('end cancel'),
  match(tokens, at) {
    const object = tokens[skip(tokens, at + 1, endFillers)];
    if (object === undefined || !contactNouns.has(object)) return false;
    return !frameOf(tokens, at, englishNegators).negated;
  },
};

/**
 * A prohibition: "don't text me", "please don't contact me again", "never message this number", "I
 * don't want you to text me anymore", "don't send me any more messages", "never reach me on this
 * number again". It has no subject of its own
 * (a statement has one: "you never text me back" is a complaint), and is not about one message or a
 * time: "don't text me back", "don't text me the address", "don't text me before 9am" are not
 * revocations. Calls are not texts: "don't call me, text me" is not a revocation.
 */
const sendFillers = words('any more anymore of these your ur further other');
const englishProhibition: Rule = {
  name: 'no_contact',
  anchors: words('text txt message msg contact email sms bother spam harass pester reach send'),
  match(tokens, at) {
    const frame = frameOf(tokens, at, englishNegators);
    // "Your text did not reach me" states.
    if (!frame.forbids && !/^(can|could|will|would)$/.test(frame.before ?? '')) return false;
    // "can you not text me" asks; "you never text me back" states.
    const asked = frame.subject !== undefined && /^(can|could|will|would)$/.test(frame.before ?? '');
    if (!frame.handedToYou && !asked && frame.subject !== undefined && statementSubjects.has(frame.subject))
      return false;
    let next = at + 1;
    const object = tokens[next];
    // "Do not contact.", "Don't text, call": the clause ends with the prohibition.
    if (object === undefined) return tokens[at] !== 'send';
    if (tokens[at] === 'send') {
      // "don't send me any more messages": sending needs both its recipient and a contact object.
      if (object !== 'me' && object !== 'us') return false;
      const what = tokens[skip(tokens, next + 1, sendFillers)];
      return what !== undefined && contactNouns.has(what);
    }
    if (prohibitionObjects.has(object) || (tokens[at] === 'reach' && object === 'out')) next++;
    else if ((object === 'this' || object === 'my') && /^(number|phone|cell)$/.test(tokens[next + 1] ?? ''))
      next += 2;
    else return false;
    const after = tokens[next];
    return after === undefined || !englishDeferrals.has(after);
  },
};

/** The Spanish forms of a prohibition's verb: "no me escribas", "no me contacten", "no me molesten". */
const spanishProhibitionVerbs = words(`
  escribas escriban escriba escribais contactes contacten contacte molestes molesten moleste
  textees texteen textee mensajees mensajeen`);
/** Sending verbs: need a contact object or "más" ("no me envíes el formulario todavía" is not one). */
const spanishSendVerbs = words('envies envien envie mandes manden mande');

/**
 * "no me escribas más", "por favor no me contacten", "no quiero que me escriban", "no me manden más
 * mensajes". Not: "no me escribiste ayer" (a past statement is not in the list of request forms),
 * "no me escribas hasta el lunes" (a time), "no me mandes el formulario todavía" (one message).
 */
const spanishSendFillers = words('mas ningun ninguna otro otros sus tus los las estos esos');
const spanishProhibition: Rule = {
  name: 'no_contact',
  anchors: new Set([...spanishProhibitionVerbs, ...spanishSendVerbs]),
  match(tokens, at) {
    if (!frameOf(tokens, at, spanishNegators).negated) return false;
    const after = tokens[skip(tokens, at + 1, spanishSendFillers)];
    if (spanishSendVerbs.has(tokens[at]!)) {
      return tokens[at + 1] === 'mas' || (after !== undefined && contactNouns.has(after));
    }
    const next = tokens[at + 1];
    return next === undefined || next === 'mas' || !spanishDeferrals.has(next);
  },
};

/**
 * "dejen de enviarme mensajes", "deja de escribirme", "paren de mandarme mensajes", "basta de
 * mensajes", "paren los mensajes", "quiero dejar de recibir mensajes". The imperative asks by its form;
 * the infinitive ("dejar de", "parar de") only when the verb names the lead as receiver ("escribirme")
 * or is the lead's receiving ("recibir"): "¿puedo dejar de enviar documentos?" is not a revocation,
 * nor is "¿puedo parar en la oficina?" (no "de" and no contact). "no dejen de escribirme" is negated.
 */
const spanishStop: Rule = {
  name: 'stop_contact',
  anchors: words(
    'deja dejen deje dejes dejad para paren pare detengan detenga deten basta dejar parar detener',
  ),
  match(tokens, at) {
    const anchor = tokens[at]!;
    const infinitive = /^(dejar|parar|detener)$/.test(anchor);
    if (frameOf(tokens, at, spanishNegators).negated) return false;
    if (tokens[at + 1] !== 'de') {
      // "paren los mensajes", "detengan sus mensajes". Not "deja un mensaje" or "para los mensajes"
      // ("leave a message", "for the messages"): only the verbs that mean nothing but stop.
      if (!/^(paren|pare|detengan|detenga|deten)$/.test(anchor)) return false;
      const object = tokens[skip(tokens, at + 1, stopFillers)];
      return object !== undefined && contactNouns.has(object);
    }
    const verb = tokens[at + 2];
    if (verb === undefined) return false;
    if (contactNouns.has(verb)) return true; // "basta de mensajes"
    // "escribirme", "contactarnos": the lead is the receiver, whoever says it.
    if (/^(escribir|enviar|mandar|contactar|llamar|molestar|textear|mensajear|spamear)(me|nos)$/.test(verb))
      return true;
    if (verb === 'recibir') {
      // Only the infinitive: "dejé de recibir sus mensajes" (accents dropped: "deje") says they stopped.
      const object = tokens[skip(tokens, at + 3, stopFillers)];
      return infinitive && object !== undefined && contactNouns.has(object);
    }
    if (infinitive) return false;
    if (/^(escribir|contactar|llamar|molestar|textear|mensajear|spamear)$/.test(verb)) return true;
    if (/^(enviar|mandar)$/.test(verb)) {
      const object = tokens[skip(tokens, at + 3, stopFillers)];
      return object !== undefined && contactNouns.has(object);
    }
    return false;
  },
};

/** What may stand between "don't want" and what is not wanted: "don't want to receive any more…". */
const receptionFillers = words(`
  to receive get getting receiving be any more anymore these those your ur the this further future
  such of from you all stupid damn other additional
  recibir mas sus tus los las estos esos ningun ninguno ninguna ningunos otro otros que me sigan sigas
  mandando enviando`);
/** A passive that is contact: "I don't want to be contacted". */
const contactedParticiples = words('contacted texted messaged called emailed spammed bothered');

/**
 * Refusing what is sent: "I don't want any more texts", "I do not wish to receive messages", "I no
 * longer want these texts", "I don't want to be contacted", "ya no quiero recibir mensajes", "no quiero
 * más mensajes", "no deseo ningún contacto". Not: "I don't want to miss your messages" (only the listed
 * words may stand between), "I don't need anything else".
 */
const refuseMessages: Rule = {
  name: 'unwanted_messages',
  anchors: words('want wanna need wish quiero quisiera deseo necesito queremos'),
  match(tokens, at) {
    const negators = /^(want|wanna|need|wish)$/.test(tokens[at]!) ? englishNegators : spanishNegators;
    if (!frameOf(tokens, at, negators).negated) return false;
    const objectAt = skip(tokens, at + 1, receptionFillers);
    const object = tokens[objectAt];
    if (object === undefined || !(contactNouns.has(object) || contactedParticiples.has(object))) return false;
    // "I don't want the texts to stop" wants them.
    return !(tokens[objectAt + 1] === 'to' && /^(stop|end|quit)$/.test(tokens[objectAt + 2] ?? ''));
  },
};

/** Where a lead's number is kept: "your list", "your database", "la lista", "su base de datos". */
const listNouns = words(`
  list lists database system contacts roster records thread group chat texts messages
  lista listas listado base registro registros sistema contactos grupo`);
const listFillers = words(`
  your ur the this that these all any my of mailing texting text sms contact calling distribution
  marketing call
  me nos mi de del la el su sus tu esta este esa numero telefono celular contacto datos por favor a`);
const numberNouns = words(
  'number phone cell info information contact details data numero telefono celular datos',
);

/**
 * Asking to be taken off: "remove me from your list", "take me off this list", "get me out of your
 * system", "remove me", "take me off", "delete my number", "lose my number", "remove my number from
 * your list", "quítenme de su lista", "sáquenme de la lista", "borren mi número". Not: "remove me from
 * the loan", "remove the co-borrower", "delete my old number" (only the listed words may stand
 * between), "borren mi número viejo", "don't remove me".
 */
const englishListVerbs = words('remove take delete erase drop get scratch scrub purge lose forget');
/** The Spanish verbs with the lead attached as object: "quítenme", "sácame", "bórrenme". */
const spanishListVerbsWithMe = words(`
  quitame quitenme quiteme quitarme sacame saquenme saqueme sacarme borrame borrenme borreme borrarme
  eliminame eliminenme elimineme eliminarme remuevanme removerme excluyanme`);
const spanishListVerbs = words(`
  quita quiten quite quitar saca saquen saque sacar borra borren borre borrar elimina eliminen elimine
  eliminar remueve remuevan remover excluyan`);

/** Whether `place` (at its index) leads to a list: "off your list", "from the database", "de su lista". */
function toList(tokens: readonly string[], placeAt: number): boolean {
  const noun = skip(tokens, placeAt + 1, listFillers);
  return noun < tokens.length && listNouns.has(tokens[noun]!);
}

/** After "remove my number": the clause ends (courtesy aside), or goes on to a list. */
function numberEnds(tokens: readonly string[], after: number, from: Words): boolean {
  if (restIsCourtesy(tokens, after)) return true;
  return from.has(tokens[after]!) && toList(tokens, after);
}

const englishFrom = words('from off');
const spanishFrom = words('de del');

const removeFromList: Rule = {
  name: 'remove_from_list',
  anchors: new Set([...englishListVerbs, ...spanishListVerbsWithMe, ...spanishListVerbs]),
  match(tokens, at) {
    const verb = tokens[at]!;
    const next = tokens[at + 1];
    if (englishListVerbs.has(verb)) {
      if (frameOf(tokens, at, englishNegators).negated) return false;
      if (next === 'me' || next === 'us') {
        // "remove me", "take me off", "take me off your list", "get me out of your system".
        const place = tokens[at + 2];
        if (restIsCourtesy(tokens, at + 2)) return /^(remove|delete|drop|scratch)$/.test(verb);
        if (place === 'off' && restIsCourtesy(tokens, at + 3)) return true;
        if (place === 'off' || place === 'from') return toList(tokens, at + 2);
        if (place === 'out' && tokens[at + 3] === 'of') return toList(tokens, at + 3);
        return false;
      }
      // "delete my number", "lose my number", "remove this number from your list". Not "take my number"
      // or "get my number" (which keep it).
      if (/^(my|this|our)$/.test(next ?? '') && !/^(take|get)$/.test(verb)) {
        if (!numberNouns.has(tokens[at + 2] ?? '')) return false;
        return numberEnds(tokens, at + 3, englishFrom);
      }
      return false;
    }
    if (frameOf(tokens, at, spanishNegators).negated) return false;
    // "sáquenme", "quítenme de su lista".
    if (spanishListVerbsWithMe.has(verb)) return numberEnds(tokens, at + 1, spanishFrom);
    // "me quiten de la lista".
    if ((tokens[at - 1] === 'me' || tokens[at - 1] === 'nos') && spanishFrom.has(next ?? ''))
      return toList(tokens, at + 1);
    // "borren mi número", "eliminen mi número de su lista". Not "borren mi número viejo".
    if ((next === 'mi' || next === 'este') && numberNouns.has(tokens[at + 2] ?? ''))
      return numberEnds(tokens, at + 3, spanishFrom);
    return false;
  },
};

/**
 * "opt me out", "I want to opt out", "how do I opt out?", "I already opted out", "opt out of these
 * texts". Not: "can I opt out of escrow?" (out of something else), "I don't want to opt out".
 */
const optOutOfFillers = words(
  'the your ur these this all any future receiving getting from it them everything',
);
const optOut: Rule = {
  name: 'opt_out',
  anchors: words('opt opted opting optout optedout'),
  match(tokens, at) {
    let out = at;
    if (!/out$/.test(tokens[at]!)) {
      if (tokens[at + 1] === 'out') out = at + 1;
      else if ((tokens[at + 1] === 'me' || tokens[at + 1] === 'us') && tokens[at + 2] === 'out') out = at + 2;
      else return false;
    }
    if (frameOf(tokens, at, englishNegators).negated) return false;
    if (tokens[out + 1] !== 'of') return true;
    const of = skip(tokens, out + 2, optOutOfFillers);
    return of >= tokens.length || contactNouns.has(tokens[of]!);
  },
};

/**
 * "unsubscribe me", "how do I unsubscribe?", "I unsubscribed already", "quiero desuscribirme". Not
 * negated: "I don't want to unsubscribe", "I didn't mean to unsubscribe".
 */
const unsubscribe: Rule = {
  name: 'unsubscribe',
  anchors: words(`
    unsubscribe unsubscribed unsubscribing unsub unsubbed unsuscribe unsubcribe
    desuscribir desuscribirme desuscribanme desuscribirse desubscribir desuscribeme`),
  match(tokens, at) {
    const negators = tokens[at]!.startsWith('des') ? spanishNegators : englishNegators;
    return !frameOf(tokens, at, negators).negated;
  },
};

/**
 * "darme de baja", "denme de baja", "quiero darme de baja", "me doy de baja". Not: "la tasa baja",
 * "no me den de baja".
 */
const spanishUnsubscribe: Rule = {
  name: 'unsubscribe',
  anchors: words('baja'),
  match(tokens, at) {
    if (tokens[at - 1] !== 'de') return false;
    const verb = tokens[at - 2];
    if (
      verb === undefined ||
      !/^(dar|darme|dame|denme|deme|den|darnos|dennos|doy|da|darse|darte)$/.test(verb)
    )
      return false;
    return !frameOf(tokens, at - 2, spanishNegators).negated;
  },
};

/**
 * "cancelar suscripción", "cancelen mi suscripción". Not: "quiero cancelar mi cita" (not a
 * subscription).
 */
const spanishCancel: Rule = {
  name: 'unsubscribe',
  anchors: words('suscripcion subscripcion suscripciones'),
  match(tokens, at) {
    let index = at - 1;
    while (index >= 0 && at - index <= 3 && /^(mi|la|su|tu|esta|de)$/.test(tokens[index]!)) index--;
    const verb = tokens[index];
    if (verb === undefined || !/^(cancelar|cancela|cancelen|cancele|cancelo|anular|anulen|anula)$/.test(verb))
      return false;
    return !frameOf(tokens, index, spanishNegators).negated;
  },
};

/**
 * "I revoke my consent", "I withdraw consent", "consent revoked", "revoco mi consentimiento", "I do not
 * consent" (alone). Not: "I withdraw my application", "I don't consent to a credit pull".
 */
const revokeConsent: Rule = {
  name: 'revoke_consent',
  anchors: words('consent permission authorization authorisation consentimiento permiso autorizacion'),
  match(tokens, at) {
    let index = at - 1;
    while (
      index >= 0 &&
      at - index <= 3 &&
      /^(my|any|all|the|your|of|mi|su|el|la|todo)$/.test(tokens[index]!)
    )
      index--;
    const verb = tokens[index];
    if (
      verb !== undefined &&
      /^(revoke|revoked|revoking|withdraw|withdrawing|rescind|rescinding|retract|retracting|revoco|revocar|revoca|retiro|retirar)$/.test(
        verb,
      )
    )
      return (
        !frameOf(tokens, index, englishNegators).negated && !frameOf(tokens, index, spanishNegators).negated
      );
    const after = tokens[at + (tokens[at + 1] === 'is' ? 2 : 1)];
    if (after !== undefined && /^(revoked|withdrawn|rescinded|revocado|retirado)$/.test(after)) return true;
    // "I do not consent" as the whole clause.
    return (
      tokens[at] === 'consent' && at === tokens.length - 1 && frameOf(tokens, at, englishNegators).negated
    );
  },
};

/**
 * "no more texts", "no more of your messages", "no more texting me", "no más mensajes", "ya no más
 * textos". Not: "no more than 20% down", "no more questions", "no más de 20%".
 */
const noMoreFillers = words(`
  of your ur these the this stupid damn fucking freaking annoying de sus tus los las estos esos`);
const noMore: Rule = {
  name: 'no_more_messages',
  anchors: words('more mas'),
  match(tokens, at) {
    if (tokens[at - 1] !== 'no') return false;
    const object = tokens[skip(tokens, at + 1, noMoreFillers)];
    return object !== undefined && (contactNouns.has(object) || sendingGerunds.has(object));
  },
};

/** "enough with the texts", "enough of your messages". Not: "is that enough?". */
const enoughFillers = words('with of the these your ur already all');
const enough: Rule = {
  name: 'no_more_messages',
  anchors: words('enough'),
  match(tokens, at) {
    const object = tokens[skip(tokens, at + 1, enoughFillers)];
    return object !== undefined && contactNouns.has(object);
  },
};

/** "leave me alone", "déjenme en paz", "que me dejen en paz". Not: "don't leave me alone". */
const leaveMeAlone: Rule = {
  name: 'leave_me_alone',
  anchors: words('alone paz'),
  match(tokens, at) {
    if (tokens[at] === 'alone') {
      if (!/^(me|us)$/.test(tokens[at - 1] ?? '') || !/^(leave|let)$/.test(tokens[at - 2] ?? ''))
        return false;
      return !frameOf(tokens, at - 2, englishNegators).negated;
    }
    if (tokens[at - 1] !== 'en') return false;
    const verb = tokens[at - 2] ?? '';
    if (/^(dejame|dejenme|dejeme|dejadme|dejanos|dejennos)$/.test(verb))
      return !frameOf(tokens, at - 2, spanishNegators).negated;
    return /^(dejen|deje|dejes)$/.test(verb) && tokens[at - 3] === 'me' && tokens[at - 4] !== 'no';
  },
};

/** "cease and desist". */
const ceaseAndDesist: Rule = {
  name: 'stop_contact',
  anchors: words('desist'),
  match: (tokens, at) => tokens[at - 1] === 'and' && tokens[at - 2] === 'cease',
};

/**
 * "put me on your do not call list", "DNC". A do-not-contact list is only ever asked for to be left
 * alone.
 */
const doNotContactList: Rule = {
  name: 'do_not_contact_list',
  anchors: words('dnc list'),
  match(tokens, at) {
    if (tokens[at] === 'dnc') return true;
    return (
      /^(call|contact|text|disturb|message)$/.test(tokens[at - 1] ?? '') &&
      tokens[at - 2] === 'not' &&
      tokens[at - 3] === 'do'
    );
  },
};

/**
 * "wrong number", "you have the wrong number", "sorry, wrong number", "número equivocado", "se
 * equivocaron de número": a stranger has given no consent at all. Only as the clause's point: "I gave
 * you the wrong number, use …" is not one (only the listed words may stand before it).
 */
const wrongNumberPreamble = {
  english: words('you u have got texted texting are re this is its the a sorry thats that s ur youre youve'),
  mistaken: words('se te les usted ustedes perdon lo siento'),
  spanish: words('tienen tiene tienes el es este un ese perdon lo siento de un a'),
};
const wrongNumber: Rule = {
  name: 'wrong_number',
  anchors: words('number person equivocado equivocada numero'),
  match(tokens, at) {
    const word = tokens[at]!;
    let start: number;
    let preamble: Words;
    if (word === 'number' || word === 'person') {
      if (tokens[at - 1] !== 'wrong') return false;
      start = at - 1;
      preamble = wrongNumberPreamble.english;
    } else if (word === 'numero') {
      if (
        tokens[at - 1] !== 'de' ||
        !/^(equivocaron|equivoco|equivocan|equivocado|equivocada)$/.test(tokens[at - 2] ?? '')
      )
        return false;
      start = at - 2;
      preamble = wrongNumberPreamble.mistaken;
    } else {
      if (tokens[at - 1] !== 'numero') return false;
      start = at - 1;
      preamble = wrongNumberPreamble.spanish;
    }
    // A short preamble of the listed words only (bounded, so a long clause is not read again per anchor).
    return start <= MAX_GAP && skip(tokens, 0, preamble) >= start && restIsCourtesy(tokens, at + 1);
  },
};

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
