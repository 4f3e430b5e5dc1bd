import { describe, expect, it } from 'vitest';
import { decideAiTurn, type AiTurn, type AiTurnState } from './ai-turn';

const now = new Date('2026-03-02T15:00:00Z');
const lead = {
  lead_id: 'lead-1',
  phone: '+15125550123',
  status: 'new' as const,
  auto_sequence: false,
  metadata: {},
  created_at: now.toISOString(),
  name: 'Ana Silva',
  first_name: null,
  last_name: null,
  email: null,
  company: null,
  notes: null,
  source: null,
  external_id: null,
  property_address: null,
};
const state = (overrides: Partial<AiTurnState> = {}): AiTurnState => ({
  account: { status: 'active', company_name: 'Sunrise', ai_pause_minutes: 1440 },
  conversation: { started: true, opted_out: false, needs_handoff: false, ai_paused_until: null },
  lead,
  optOutPending: false,
  handled: false,
  aiPaused: false,
  aiMessagesToday: 0,
  requirements: [
    { id: 'r1', name: 'Email', type: 'email', required: true },
    { id: 'r2', name: 'Notes', type: 'text', required: false },
  ],
  collected: new Set(),
  stepHold: null,
  stepEnrollmentActive: null,
  consent: { required: false, status: 'none' },
  ...overrides,
});
const turn = (overrides: Partial<AiTurn> = {}): AiTurn => ({
  phone: lead.phone,
  message_ids: ['m1', 'm2'],
  sequence_step: null,
  proposal: {
    reply: 'Thanks!',
    collected: [{ requirement_id: 'r1', value: 'ana@example.com', attachment: null }],
    handoff: null,
    optOut: null,
    summary: 'Collected: Email.',
  },
  unavailable: false,
  reply_message_id: 'reply-1',
  responder: 'offline',
  maxMessagesPerDay: 20,
  ...overrides,
});

const types = (events: { type: string }[]) => events.map((event) => event.type);
/** The request for an AI-written sequence step of the lead's enrollment `e1`. */
const aiStep = (stepOrder: number) => ({
  enrollment_id: 'e1',
  sequence_id: 's1',
  step_order: stepOrder,
  phone: lead.phone,
  instructions: 'x',
});

describe('an AI turn under the consent rule', () => {
  const noConsent = { consent: { required: true, status: 'none' as const } };

  it("holds a sequence step's message for consent instead of sending it, completing no turn", () => {
    // Given an account requiring consent and a lead without it, when the AI wrote a step's message,
    const events = decideAiTurn(turn({ sequence_step: aiStep(1), message_ids: [] }), state(noConsent), now);
    // then it is not sent: the step waits for consent (and is written afresh once granted).
    expect(events).toEqual([
      {
        type: 'sequence.step_held_for_consent',
        data: {
          enrollment_id: 'e1',
          sequence_id: 's1',
          step_order: 1,
          lead_id: lead.lead_id,
          phone: lead.phone,
          stage: 'ai_send',
          reason: 'no_consent',
          due_at: now.toISOString(),
        },
      },
    ]);
  });

  it('answers a lead who wrote first without consent: a reply is not proactive', () => {
    expect(types(decideAiTurn(turn(), state(noConsent), now))).toContain('message.outbound_requested');
  });

  it("sends a step's message once consent is granted", () => {
    const events = decideAiTurn(
      turn({ sequence_step: aiStep(1), message_ids: [] }),
      state({ consent: { required: true, status: 'granted' } }),
      now,
    );
    expect(events[0]).toMatchObject({ type: 'message.outbound_requested', data: { source: 'sequence' } });
  });
});

describe('deciding an AI turn', () => {
  it('replies through the send decider, records the item, completes the checklist and qualifies the lead', () => {
    const events = decideAiTurn(turn(), state(), now);
    expect(types(events)).toEqual([
      'message.outbound_requested',
      'lead.status_changed',
      'checklist.item_collected',
      'checklist.completed',
      'lead.status_changed',
      'ai.turn_completed',
    ]);
    expect(events[4]!.data).toMatchObject({ previous_status: 'contacted', new_status: 'qualified' });
    expect(events[0]!.data).toMatchObject({ source: 'ai', body: 'Thanks!' });
  });

  it('writes nothing for a turn already handled (redelivery, restart, a second agent)', () => {
    expect(decideAiTurn(turn(), state({ handled: true }), now)).toEqual([]);
  });

  it.each([
    [
      { conversation: { started: true, opted_out: true, needs_handoff: false, ai_paused_until: null } },
      'lead_opted_out',
    ],
    [{ optOutPending: true }, 'lead_opted_out'],
    [
      { account: { status: 'deactivated' as const, company_name: 'S', ai_pause_minutes: 1 } },
      'account_deactivated',
    ],
    [{ aiPaused: true }, 'ai_paused'],
    [{ aiMessagesToday: 20 }, 'daily_cap'],
  ])('sends nothing when %j', (overrides, reason) => {
    const events = decideAiTurn(turn(), state(overrides), now);
    expect(types(events)).toEqual(['ai.turn_completed']);
    expect(events[0]!.data).toMatchObject({ outcome: 'skipped', reason });
  });

  it('hands off with ai_unavailable when the model stayed down', () => {
    const events = decideAiTurn(turn({ proposal: null, unavailable: true }), state(), now);
    expect(types(events)).toEqual(['conversation.handoff_requested', 'ai.turn_completed']);
    expect(events[0]!.data).toMatchObject({ reason: 'ai_unavailable' });
  });

  it('fails a sequence step it cannot write, naming why', () => {
    const step = aiStep(0);
    const events = decideAiTurn(
      turn({ sequence_step: step, message_ids: [] }),
      state({
        conversation: { started: true, opted_out: true, needs_handoff: false, ai_paused_until: null },
      }),
      now,
    );
    expect(types(events)).toEqual(['sequence.ai_step_failed', 'ai.turn_completed']);
    expect(events[0]!.data).toMatchObject({ enrollment_id: 'e1', reason: 'lead_opted_out' });
  });

  it('leaves a sequence step undecided while its lead has a STOP answered but not yet decided', () => {
    const step = aiStep(0);
    // The decision will end the enrollment as opted_out; failing the step now would move it on first.
    const waiting = turn({ sequence_step: step, message_ids: [] });
    expect(decideAiTurn(waiting, state({ optOutPending: true, stepEnrollmentActive: true }), now)).toEqual(
      [],
    );
    // Once decided, the enrollment has ended and the step's turn ends with it.
    const ended = decideAiTurn(waiting, state({ optOutPending: true, stepEnrollmentActive: false }), now);
    expect(types(ended)).toEqual(['ai.turn_completed']);
    expect(ended[0]!.data).toMatchObject({ outcome: 'skipped', reason: 'enrollment_ended' });
  });

  it('holds a sequence step written while the window was open when it has closed by the time it is sent', () => {
    // Given an AI step whose message the model wrote at 19:59 in Austin,
    const step = aiStep(1);
    const reopens = new Date('2026-03-03T15:00:00Z');
    // when it is to be sent after the lead's window closed,
    const events = decideAiTurn(
      turn({ sequence_step: step, message_ids: [] }),
      state({
        stepHold: { reason: 'quiet_hours', state: null, zone: 'America/Chicago', next_allowed_at: reopens },
      }),
      now,
    );
    // then nothing goes out: the hold is recorded with the time the window opens again.
    expect(types(events)).toEqual(['sequence.step_held']);
    expect(events[0]!.data).toEqual({
      enrollment_id: 'e1',
      sequence_id: 's1',
      lead_id: 'lead-1',
      phone: lead.phone,
      step_order: 1,
      stage: 'ai_send',
      reason: 'quiet_hours',
      state: null,
      zone: 'America/Chicago',
      next_step_at: reopens.toISOString(),
    });
  });

  it('sends nothing for a sequence step whose enrollment ended while the message was being written', () => {
    // Given an AI step the model has written,
    const step = aiStep(1);
    // when the lead was unenrolled meanwhile,
    const events = decideAiTurn(
      turn({ sequence_step: step, message_ids: [] }),
      state({ stepEnrollmentActive: false }),
      now,
    );
    // then no message is requested and nothing is collected: the turn is recorded as skipped.
    expect(types(events)).toEqual(['ai.turn_completed']);
    expect(events[0]!.data).toMatchObject({
      outcome: 'skipped',
      reason: 'enrollment_ended',
      reply_message_id: null,
    });
  });
});

describe('an opt-out the model recorded', () => {
  const revoked = (reason: string) => turn({ proposal: { ...turn().proposal!, optOut: reason } });

  it('is recorded as STOP is, with one confirmation and nothing else of the turn', () => {
    // Given a model that recorded items and wrote a reply, but judged the burst a revocation,
    const events = decideAiTurn(revoked('Said "I am done with you people"'), state(), now);
    // then only the opt-out, its confirmation and the turn's record are written.
    expect(types(events)).toEqual(['lead.opted_out', 'message.outbound_requested', 'ai.turn_completed']);
    expect(events[0]!.data).toEqual({
      phone: lead.phone,
      lead_id: 'lead-1',
      lead_name: 'Ana Silva',
      keyword: 'AI',
      method: 'ai',
      message_id: 'm2',
      reason: 'Said "I am done with you people"',
    });
    expect(events[1]!.data).toMatchObject({
      source: 'system',
      body: expect.stringContaining('Sunrise: You are unsubscribed'),
    });
    expect(events[2]!.data).toMatchObject({ outcome: 'silent', reason: 'opted_out', reply_message_id: null });
  });

  it('confirms nothing again for a number opted out already or whose STOP is being decided', () => {
    for (const given of [
      state({
        conversation: { started: true, opted_out: true, needs_handoff: false, ai_paused_until: null },
      }),
      state({ optOutPending: true }),
    ]) {
      const events = decideAiTurn(revoked('asked to stop'), given, now);
      expect(types(events)).toEqual(['ai.turn_completed']);
      expect(events[0]!.data).toMatchObject({ outcome: 'skipped', reason: 'lead_opted_out' });
    }
  });
});
