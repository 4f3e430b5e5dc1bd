import {
  MAX_GAP,
  type Rule,
  type Words,
  contactNouns,
  englishNegators,
  frameOf,
  restIsCourtesy,
  sendingGerunds,
  skip,
  spanishNegators,
  words,
} from './reading';

// Requests to be taken off a list, to unsubscribe or opt out, and the other set phrases of revocation.

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

export const removeFromList: Rule = {
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
export const optOut: Rule = {
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
export const unsubscribe: Rule = {
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
export const spanishUnsubscribe: Rule = {
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
export const spanishCancel: Rule = {
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
export const revokeConsent: Rule = {
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
export const noMore: Rule = {
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
export const enough: Rule = {
  name: 'no_more_messages',
  anchors: words('enough'),
  match(tokens, at) {
    const object = tokens[skip(tokens, at + 1, enoughFillers)];
    return object !== undefined && contactNouns.has(object);
  },
};

/** "leave me alone", "déjenme en paz", "que me dejen en paz". Not: "don't leave me alone". */
export const leaveMeAlone: Rule = {
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
export const ceaseAndDesist: Rule = {
  name: 'stop_contact',
  anchors: words('desist'),
  match: (tokens, at) => tokens[at - 1] === 'and' && tokens[at - 2] === 'cease',
};

/**
 * "put me on your do not call list", "DNC". A do-not-contact list is only ever asked for to be left
 * alone.
 */
export const doNotContactList: Rule = {
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
export const wrongNumber: Rule = {
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
