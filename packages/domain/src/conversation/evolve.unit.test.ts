import type { NewEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { decideLeadImports } from '../lead/decide';
import { evolveLead } from '../lead/evolve';
import { decideReceiveMessage, type ConversationState, type ReceiveMessage } from './decide';
import { evolveConversation, evolveConversationState, newConversation } from './evolve';

const now = new Date('2026-03-02T15:00:00Z');
const phone = '+12125550100';
const account = { status: 'active' as const, company_name: 'Sunrise', ai_pause_minutes: 1440 };
let ids = 0;
const context = { newId: () => `id-${++ids}`, now };
const receive = (body: string): ReceiveMessage => ({
  type: 'ReceiveMessage',
  message_id: context.newId(),
  phone,
  to: '+15125550000',
  body,
  provider_message_id: `SM${ids}`,
  media: [],
});

describe('a conversation, given its events', () => {
  const ref = { phone, lead_id: null, lead_name: null };
  it.each<[NewEvent, object]>([
    [{ type: 'lead.opted_out', data: { ...ref, keyword: 'STOP', message_id: 'm' } }, { opted_out: true }],
    [
      { type: 'conversation.handoff_requested', data: { ...ref, reason: 'asked for a person' } },
      { needs_handoff: true },
    ],
    [
      {
        type: 'conversation.ai_paused',
        data: { phone, paused_until: '2026-03-03T15:00:00.000Z', reason: 'manual_message' },
      },
      { ai_paused_until: new Date('2026-03-03T15:00:00Z') },
    ],
  ])('%j', (event, change) => {
    expect(evolveConversation(undefined, event)).toEqual({ ...newConversation, ...change });
  });

  it('is left alone by events that are not about it', () => {
    const event: NewEvent = { type: 'lead.deleted', data: { lead_id: 'l', phone } };
    expect(evolveConversation(undefined, event)).toBeUndefined();
  });
});

describe('a lead, given its events', () => {
  const { events } = decideLeadImports(
    [{ phone, name: 'Dana', auto_sequence: false, metadata: { a: 1, b: 2 } }],
    [],
    { ...context, origin: 'api' },
  );
  const created = evolveLead(undefined, events[0]!, now)!;

  it('is created with its fields, and merges metadata on update, a null removing its key', () => {
    expect(created).toMatchObject({ phone, name: 'Dana', status: 'new', metadata: { a: 1, b: 2 } });
    const updated = evolveLead(
      created,
      {
        type: 'lead.updated',
        data: { lead_id: created.lead_id, phone, changes: { email: 'd@x.io', metadata: { a: null, c: 3 } } },
      },
      now,
    );
    expect(updated).toMatchObject({ email: 'd@x.io', metadata: { b: 2, c: 3 } });
  });

  it('ignores another lead’s update, and is gone once deleted', () => {
    const other: NewEvent = {
      type: 'lead.status_changed',
      data: { lead_id: 'other', phone, previous_status: 'new', new_status: 'lost' },
    };
    expect(evolveLead(created, other, now)).toEqual(created);
    const deleted: NewEvent = { type: 'lead.deleted', data: { lead_id: created.lead_id, phone } };
    expect(evolveLead(created, deleted, now)).toBeUndefined();
  });
});

describe('inbound messages decided one after another in one command', () => {
  it('decide as they would one by one: a new sender becomes a lead once, STOP then START confirm each', () => {
    let state: ConversationState = {
      account,
      conversation: undefined,
      lead: undefined,
      optOutPending: false,
    };
    const decided: NewEvent[][] = [];
    for (const body of ['Hi, is this Sunrise?', 'STOP', 'START']) {
      const events = decideReceiveMessage(receive(body), state, context);
      decided.push(events);
      state = events.reduce((next, event) => evolveConversationState(next, event, now), state);
    }
    const types = decided.map((events) => events.map((event) => event.type));
    expect(types[0]).toContain('lead.created');
    expect(types[0]).toContain('conversation.started');
    expect(types[1]).not.toContain('lead.created');
    expect(types[1]).not.toContain('conversation.started');
    expect(types[1]).toContain('lead.opted_out');
    expect(types[2]).toContain('lead.opted_in');
    expect(state.conversation).toMatchObject({ started: true, opted_out: false });
  });
});
