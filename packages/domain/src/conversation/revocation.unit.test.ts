import { describe, expect, it } from 'vitest';
import { optOutOf } from './decide';
import { freeTextRevocation } from './revocation';

/**
 * The revocation corpus: how borrowers say "stop" by text, in English and Spanish, and messages that
 * only use the same words about something else. Each row names its language so both stay covered.
 */
const revocations: [body: string, language: 'en' | 'es'][] = [
  ['please stop texting me', 'en'],
  ['Stop texting me', 'en'],
  ['STOP SENDING ME MESSAGES', 'en'],
  ['Stop messaging me!!', 'en'],
  ['stop contacting me', 'en'],
  ["don't contact me again", 'en'],
  ['Do not text me anymore.', 'en'],
  ['never text me again', 'en'],
  ['Do not message this number', 'en'],
  ['take me off your list', 'en'],
  ['Remove me from your list', 'en'],
  ['please remove me', 'en'],
  ['Take me off this list now!', 'en'],
  ['remove my number from your list', 'en'],
  ['Delete my number', 'en'],
  ['lose my number', 'en'],
  ['no more messages', 'en'],
  ['No more texts please', 'en'],
  ["I don't want any more texts", 'en'],
  ['I no longer wish to receive these messages', 'en'],
  ['I do not want to be contacted', 'en'],
  ['opt me out', 'en'],
  ['I want to opt out of these texts', 'en'],
  ['how do I unsubscribe?', 'en'],
  ['unsubscribe me from this list', 'en'],
  ['Can you please stop texting me?', 'en'],
  ['I told you to stop texting me', 'en'],
  ['I want you to stop contacting me', 'en'],
  ['Stop. I’m not interested.', 'en'],
  ['Not interested, please stop', 'en'],
  ['Who is this? Stop texting me', 'en'],
  ['stop f***ing texting me', 'en'],
  ['STOP SPAMMING ME', 'en'],
  ['quit texting me', 'en'],
  ['leave me alone', 'en'],
  ['Wrong number', 'en'],
  ['You have the wrong number', 'en'],
  ['I revoke my consent', 'en'],
  ['cease and desist', 'en'],
  ['cancel my subscription', 'en'],
  ['end all messages', 'en'],
  ["I'd like to stop receiving these texts", 'en'],
  ['please stop texting me at work', 'en'],
  ["If you don't stop texting me I'll report you", 'en'],
  ["Please don't send me any more messages", 'en'],
  ['Please never reach me on this number again', 'en'],
  ['put me on your do not call list', 'en'],
  ['STOP STOP STOP', 'en'],
  ['stop it now', 'en'],
  ['no más mensajes', 'es'],
  ['No mas textos por favor', 'es'],
  ['no me escribas más', 'es'],
  ['Por favor no me contacten más', 'es'],
  ['dejen de enviarme mensajes', 'es'],
  ['Deja de escribirme', 'es'],
  ['paren de mandarme mensajes', 'es'],
  ['ya no quiero recibir mensajes', 'es'],
  ['No quiero más mensajes', 'es'],
  ['no deseo recibir más mensajes', 'es'],
  ['no quiero que me escriban', 'es'],
  ['no me manden más mensajes', 'es'],
  ['baja', 'es'],
  ['BAJA', 'es'],
  ['Alto!', 'es'],
  ['parar', 'es'],
  ['cancelar suscripción', 'es'],
  ['quiero darme de baja', 'es'],
  ['denme de baja por favor', 'es'],
  ['quítenme de su lista', 'es'],
  ['sáquenme de la lista', 'es'],
  ['borren mi número', 'es'],
  ['eliminen mi número de su lista', 'es'],
  ['déjenme en paz', 'es'],
  ['basta de mensajes', 'es'],
  ['¡Ya basta!', 'es'],
  ['número equivocado', 'es'],
  ['revoco mi consentimiento', 'es'],
  ['no me molesten más', 'es'],
  ['quiero dejar de recibir mensajes', 'es'],
  ['Stop por favor', 'es'],
];

const nonRevocations: [body: string, language: 'en' | 'es'][] = [
  ['stop by the office?', 'en'],
  ['Can I stop by tomorrow at 3?', 'en'],
  ['can I stop the W-2 upload?', 'en'],
  ['I want to cancel my appointment', 'en'],
  ["don't stop, I'm interested", 'en'],
  ['when does the promo end?', 'en'],
  ["Please don't stop texting me updates", 'en'],
  ['I had to stop working last year', 'en'],
  ['Should I stop paying my current mortgage?', 'en'],
  ["I'll stop texting you and call instead", 'en'],
  ['Can I stop sending paystubs now?', 'en'],
  ['How do I remove a document I uploaded?', 'en'],
  ['Please remove the co-borrower from the application', 'en'],
  ['Remove me from the loan as co-signer', 'en'],
  ['Take me through the next steps', 'en'],
  ['no more than 20% down?', 'en'],
  ['No more questions, thanks!', 'en'],
  ['Text me the details please', 'en'],
  ['Why did you stop texting me?', 'en'],
  ["I don't want to miss your messages", 'en'],
  ["Don't text me back, I'll call you", 'en'],
  ["Don't text me before 9am", 'en'],
  ['Can I opt out of escrow?', 'en'],
  ["I don't want to unsubscribe", 'en'],
  ['I gave you the wrong number, use 512-555-0100', 'en'],
  ['End of the month works for me', 'en'],
  ['Cancel that, I meant Tuesday', 'en'],
  ['I quit my job last month, does that matter?', 'en'],
  ['I need to end my lease first', 'en'],
  ["I'm interested, keep the messages coming", 'en'],
  ['You can text me anytime', 'en'],
  ["I don't want the texts to stop", 'en'],
  ['Why not text me instead of calling?', 'en'],
  ['you never text me back', 'en'],
  ['Your message did not reach me', 'en'],
  ['Leave the documents at the front desk', 'en'],
  ['Take my number down: 512-555-0100', 'en'],
  ['Wait, stop, I sent the wrong file', 'en'],
  ["I'm driving with Do Not Disturb turned on. I'll see your message when I get where I'm going.", 'en'],
  ['How do I stop the automatic payments?', 'en'],
  ['Oh stop, you are too kind', 'en'],
  ['¿puedo parar en la oficina?', 'es'],
  ['¿Puedo pasar por la oficina mañana?', 'es'],
  ['¿La tasa baja la próxima semana?', 'es'],
  ['El costo es muy alto', 'es'],
  ['¿Para cuándo necesitan los documentos?', 'es'],
  ['Quiero cancelar mi cita', 'es'],
  ['No dejen de escribirme, me interesa', 'es'],
  ['No me mandes el formulario todavía', 'es'],
  ['¿Me pueden mandar más información?', 'es'],
  ['No me llegó el mensaje', 'es'],
  ['Ya envié mis documentos', 'es'],
  ['¿Cuándo termina la promoción?', 'es'],
  ['No quiero perder sus mensajes', 'es'],
  ['Sí, escríbanme mañana', 'es'],
  ['No tengo más preguntas', 'es'],
  ['¿No más de 20% de enganche?', 'es'],
  ['Borren el documento anterior, les mando otro', 'es'],
  ['¿Me pueden dar de alta?', 'es'],
  ['Mi número nuevo es 512-555-0100', 'es'],
  ['¿Puedo dejar de enviar documentos?', 'es'],
  ['No me escribiste ayer', 'es'],
  ['Deja un mensaje con mi esposa', 'es'],
  ['Dejé de recibir sus mensajes, ¿pasó algo?', 'es'],
  ['No me escribas hasta el lunes', 'es'],
  ['Borren mi número viejo, este es el nuevo', 'es'],
  ['¿Hay un número para mensajes?', 'es'],
  ['No me quiten de la lista', 'es'],
];

describe('the revocation corpus', () => {
  it('holds at least 40 of each, in both languages', () => {
    for (const corpus of [revocations, nonRevocations]) {
      expect(corpus.length).toBeGreaterThanOrEqual(40);
      expect(corpus.filter(([, language]) => language === 'en').length).toBeGreaterThanOrEqual(20);
      expect(corpus.filter(([, language]) => language === 'es').length).toBeGreaterThanOrEqual(20);
    }
  });

  it.each(revocations)('%j (%s) opts out', (body) => {
    expect(optOutOf(body)).toBeDefined();
  });

  it.each(nonRevocations)('%j (%s) does not opt out', (body) => {
    expect(optOutOf(body)).toBeUndefined();
  });
});

describe('keywords and free text', () => {
  it('keeps the keywords keywords: the log records the keyword as listed, free text the rule it matched', () => {
    expect(optOutOf('Stop.')).toEqual({ method: 'keyword', keyword: 'STOP' });
    expect(optOutOf('opt-out')).toEqual({ method: 'keyword', keyword: 'OPTOUT' });
    expect(optOutOf('take me off your list')).toEqual({ method: 'free_text', keyword: 'remove_from_list' });
    expect(optOutOf('please stop texting me')).toEqual({ method: 'free_text', keyword: 'stop_contact' });
  });

  it('never reads START, HELP or their variants as a revocation', () => {
    for (const body of ['START', 'unstop', 'Yes', 'HELP', 'help?', 'yes please'])
      expect(optOutOf(body)).toBeUndefined();
  });
});

describe('reading any input', () => {
  /** 40,000 characters of each shape; a matcher that reads a message again per word would not finish. */
  const long = (unit: string) => unit.repeat(Math.ceil(40_000 / unit.length)).slice(0, 40_000);

  it.each([
    ['words that start rules but never finish them', long('stop the remove me from the wrong ')],
    ['one word of 40,000 letters', long('a')],
    ['courtesy words', long('please ')],
    ['preamble words', long('you have the ')],
    ['negations', long("don't never not ")],
    ['punctuation and dashes', long('!?.,- - ')],
    ['accents and emoji', long('é🛑ñ ')],
    ['Spanish fragments', long('no me de la lista ')],
  ])('reads %s in one pass', (_shape, body) => {
    expect(freeTextRevocation(body)).toBeUndefined();
  });

  it('finds a revocation at the end of a long message', () => {
    expect(freeTextRevocation(`${long('I have a question about my loan. ')} Please stop texting me.`)).toBe(
      'stop_contact',
    );
  });
});
