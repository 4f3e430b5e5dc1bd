import { describe, expect, it } from 'vitest';
import type { Lead } from '../lead/state';
import {
  aiPaused,
  decideReceiveMessage,
  decideResumeAi,
  decideSendMessage,
  keywordOf,
  type ConversationState,
  type ReceiveMessage,
  type SendMessage,
} from './decide';

const now = new Date('2026-03-02T15:00:00Z');
const lead: Lead = {
  lead_id: 'lead-1',
  phone: '+15125550101',
  name: 'Ana Diaz',
  first_name: null,
  last_name: null,
  email: null,
  company: null,
  notes: null,
  source: null,
  external_id: null,
  property_address: null,
  status: 'new',
  auto_sequence: false,
  metadata: {},
  created_at: now.toISOString(),
};
const conversation = { started: true, opted_out: false, needs_handoff: false, ai_paused_until: null };
const given = (overrides: Partial<ConversationState> = {}): ConversationState => ({
  account: { status: 'active', company_name: 'Sunrise', ai_pause_minutes: 60 },
  conversation,
  lead,
  optOutPending: false,
  ...overrides,
});
const send: SendMessage = {
  type: 'SendMessage',
  message_id: 'msg-1',
  phone: lead.phone,
  body: 'Hi',
  source: 'manual',
  sender_name: 'Maria',
};
const receive = (body: string): ReceiveMessage => ({
  type: 'ReceiveMessage',
  message_id: 'in-1',
  phone: lead.phone,
  to: '+15125550000',
  body,
  provider_message_id: 'SM1',
  media: [],
});
let ids = 0;
const context = { newId: () => `id-${++ids}`, now };
const types = (events: { type: string }[]) => events.map((event) => event.type);

describe('keywords', () => {
  it.each([
    'STOP',
    'STOPALL',
    'UNSUBSCRIBE',
    'CANCEL',
    'END',
    'QUIT',
    'REVOKE',
    'OPTOUT',
    ' stop ',
    'Stop\n',
    'Stop.',
    'stop!!',
    'STOP!!!',
    '¡Stop!',
    '"stop"',
    'stop 🛑',
    'opt out',
    'Opt-out',
    'opt_out',
    'OPT OUT.',
    'stop all',
    'Stop All!',
    'unsubscribe me',
    'Unsubscribe me please',
    'please stop',
    'Stop now!',
    'Cancel.',
    'quit!',
    'End.',
    'Revoke',
  ])('%j opts out', (body) => expect(keywordOf(body)?.kind).toBe('opt_out'));
  it.each(['START', 'unstop', ' Yes ', 'Start.', 'yes please', 'UN-STOP'])('%j opts in', (body) =>
    expect(keywordOf(body)?.kind).toBe('opt_in'),
  );
  it('records the keyword as listed, however it was typed', () => {
    expect(keywordOf('Opt-out!')).toEqual({ kind: 'opt_out', word: 'OPTOUT' });
    expect(keywordOf('stop all.')).toEqual({ kind: 'opt_out', word: 'STOPALL' });
  });
  it('knows HELP and nothing else', () => {
    expect(keywordOf('help?')?.kind).toBe('help');
    for (const body of [
      'stop by the office?',
      'can I stop the W-2 upload?',
      'cancel my appointment',
      'the end',
      'no',
      '',
      '...',
      'please',
      'me',
    ])
      expect(keywordOf(body)).toBeUndefined();
  });
});

describe('sending a message', () => {
  it('pauses the AI for the account’s minutes, clears the handoff flag and moves a new lead to contacted', () => {
    const events = decideSendMessage(
      send,
      given({ conversation: { ...conversation, started: false, needs_handoff: true } }),
      now,
    );
    expect(types(events)).toEqual([
      'conversation.started',
      'message.outbound_requested',
      'conversation.ai_paused',
      'conversation.handoff_cleared',
      'lead.status_changed',
    ]);
    expect(events[2]!.data).toMatchObject({ paused_until: '2026-03-02T16:00:00.000Z' });
    expect(events[4]!.data).toMatchObject({ previous_status: 'new', new_status: 'contacted' });
  });

  it('never moves a lead back, and does not pause the AI for a sequence step', () => {
    const events = decideSendMessage(
      { ...send, source: 'sequence' },
      given({ lead: { ...lead, status: 'qualified' } }),
      now,
    );
    expect(types(events)).toEqual(['message.outbound_requested']);
  });

  it('refuses an opted-out number, a deactivated account and an unknown phone', () => {
    expect(() =>
      decideSendMessage(send, given({ conversation: { ...conversation, opted_out: true } }), now),
    ).toThrow(expect.objectContaining({ status: 409, code: 'lead_opted_out' }));
    expect(() =>
      decideSendMessage(
        send,
        given({ account: { status: 'deactivated', company_name: 'S', ai_pause_minutes: 1 } }),
        now,
      ),
    ).toThrow(expect.objectContaining({ status: 409, code: 'account_deactivated' }));
    expect(() => decideSendMessage(send, given({ lead: undefined, conversation: undefined }), now)).toThrow(
      expect.objectContaining({ status: 404 }),
    );
  });
});

describe('the AI pause', () => {
  it('ends at paused_until, and resume-ai ends it earlier, idempotently', () => {
    const paused = { ...conversation, ai_paused_until: new Date('2026-03-02T16:00:00Z') };
    expect(aiPaused(paused, now)).toBe(true);
    expect(aiPaused(paused, new Date('2026-03-02T16:00:00Z'))).toBe(false);
    expect(types(decideResumeAi(lead.phone, given({ conversation: paused }), now))).toEqual([
      'conversation.ai_resumed',
    ]);
    expect(decideResumeAi(lead.phone, given(), now)).toEqual([]);
  });
});

describe('receiving a message', () => {
  it('makes an unknown sender a lead, starts the conversation and reports the reply', () => {
    const events = decideReceiveMessage(
      receive('Hello'),
      given({ lead: undefined, conversation: undefined }),
      context,
    );
    expect(types(events)).toEqual([
      'lead.created',
      'conversation.started',
      'message.received',
      'conversation.reply_received',
    ]);
    expect(events[0]!.data).toMatchObject({ phone: lead.phone, origin: 'inbound_message', status: 'new' });
  });

  it('opts out once, with a confirmation naming the company; a second STOP changes nothing', () => {
    const events = decideReceiveMessage(receive(' stop '), given(), context);
    expect(types(events)).toEqual([
      'message.received',
      'conversation.reply_received',
      'lead.opted_out',
      'message.outbound_requested',
    ]);
    expect(events[3]!.data).toMatchObject({ source: 'system', body: expect.stringContaining('Sunrise') });
    const again = decideReceiveMessage(
      receive('STOP'),
      given({ conversation: { ...conversation, opted_out: true } }),
      context,
    );
    expect(types(again)).toEqual(['message.received', 'conversation.reply_received']);
  });

  it('opts back in only after an opt-out, always answers HELP, and sends nothing for a deactivated account', () => {
    const optedOut = given({ conversation: { ...conversation, opted_out: true } });
    expect(types(decideReceiveMessage(receive('START'), optedOut, context))).toContain('lead.opted_in');
    expect(types(decideReceiveMessage(receive('YES'), given(), context))).not.toContain('lead.opted_in');
    expect(types(decideReceiveMessage(receive('HELP'), optedOut, context))).toContain(
      'message.outbound_requested',
    );
    const deactivated = given({ account: { status: 'deactivated', company_name: 'S', ai_pause_minutes: 1 } });
    expect(types(decideReceiveMessage(receive('STOP'), deactivated, context))).toEqual([
      'message.received',
      'conversation.reply_received',
      'lead.opted_out',
    ]);
  });
});

describe('a revocation in words', () => {
  it('opts out as STOP does, naming the method and the rule, with one confirmation', () => {
    const events = decideReceiveMessage(receive('No más mensajes, por favor'), given(), context);
    expect(types(events)).toEqual([
      'message.received',
      'conversation.reply_received',
      'lead.opted_out',
      'message.outbound_requested',
    ]);
    expect(events[2]!.data).toMatchObject({
      method: 'free_text',
      keyword: 'no_more_messages',
      message_id: 'in-1',
    });
    expect(events[3]!.data).toMatchObject({
      source: 'system',
      body: expect.stringContaining('unsubscribed'),
    });
  });

  it('confirms nothing a second time, whatever the words, and START still opts back in', () => {
    const optedOut = given({ conversation: { ...conversation, opted_out: true } });
    for (const body of ['please stop texting me', 'STOP', 'dejen de escribirme'])
      expect(types(decideReceiveMessage(receive(body), optedOut, context))).toEqual([
        'message.received',
        'conversation.reply_received',
      ]);
    expect(types(decideReceiveMessage(receive('START'), optedOut, context))).toContain('lead.opted_in');
  });

  it('records a keyword opt-out with its method', () => {
    expect(decideReceiveMessage(receive('Opt-out!'), given(), context)[2]!.data).toMatchObject({
      method: 'keyword',
      keyword: 'OPTOUT',
    });
  });
});

describe('lead_name on conversation events', () => {
  it('is first and last name joined for a lead without a name, as every event names a lead', () => {
    const unnamed = { ...lead, name: null, first_name: 'Ana', last_name: 'Diaz' };
    const sent = decideSendMessage(send, given({ lead: unnamed, conversation: undefined }), now);
    const received = decideReceiveMessage(receive('Hello'), given({ lead: unnamed }), context);
    const named = [...sent, ...received].filter((event) => 'lead_name' in event.data);
    expect(named.length).toBeGreaterThan(0);
    for (const event of named) expect(event.data).toMatchObject({ lead_name: 'Ana Diaz' });
  });
});
