import {
  type Frame,
  type Rule,
  contactNouns,
  englishDeferrals,
  englishNegators,
  firstPerson,
  frameOf,
  pastQuestion,
  prohibitionObjects,
  receivingGerunds,
  secondPerson,
  sendObjects,
  sendingGerunds,
  skip,
  spanishDeferrals,
  spanishNegators,
  statementSubjects,
  stopFillers,
  words,
} from './reading';

// Requests to stop sending, prohibitions and refusals, in English and Spanish.

/**
 * A request to stop sending: "stop texting me", "can you stop sending me these", "quit f***ing
 * messaging me", "stop all messages", "I want you to stop contacting me", "if you don't stop texting
 * me…". Not a request: "stop by the office", "can I stop the W-2 upload" (no contact object), "don't
 * stop texting me" (negated), "I'll stop texting you" / "can I stop sending documents?" (the lead's own
 * sending), "why did you stop texting me?" (a question about the past). The lead's own receiving is
 * theirs to stop: "I'd like to stop receiving these texts" is a revocation.
 */
export const stopContact: Rule = {
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
export const endContact: Rule = {
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
export const englishProhibition: Rule = {
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
export const spanishProhibition: Rule = {
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
export const spanishStop: Rule = {
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
export const refuseMessages: Rule = {
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
