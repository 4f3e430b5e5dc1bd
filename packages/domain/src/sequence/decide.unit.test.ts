import { describe, expect, it } from 'vitest';
import type { SequenceStep } from './definition';
import type { Lead } from '../lead/state';
import { decideAiStepOutcome, decideDueStep, type Enrollment, type StepState } from './decide';
import { decideSequences } from './definition';
import { decideEnroll, decideUnenroll, type EnrollState } from './enrollment';
import { DEFAULT_SENDING_WINDOW } from './sending-window';

const now = new Date('2026-03-02T15:00:00Z');
const schedule = { now, hourSeconds: 3600, messageId: 'msg-1' };
const fixed = (message: string, delay_hours = 0, skip_if_replied = true): SequenceStep => ({
  type: 'fixed',
  message,
  instructions: null,
  delay_hours,
  skip_if_replied,
});
const lead: Lead = {
  lead_id: 'lead-1',
  phone: '+12125550100',
  name: 'Dana Scully',
  first_name: null,
  last_name: null,
  email: null,
  company: null,
  notes: null,
  source: null,
  external_id: null,
  property_address: null,
  status: 'contacted',
  auto_sequence: false,
  metadata: {},
  created_at: now.toISOString(),
};
const enrollment: Enrollment = {
  id: 'enr-1',
  sequence_id: 'seq-1',
  sequence_name: 'Welcome',
  lead_id: 'lead-1',
  phone: lead.phone,
  status: 'active',
  steps_version: 1,
  total_steps: 2,
  current_step: 1,
  next_step_at: now,
  awaiting_ai: false,
  replied: false,
  hold_reason: null,
};
const given = (
  overrides: Partial<StepState> = {},
  enrollmentOverrides: Partial<Enrollment> = {},
): StepState => ({
  account: {
    status: 'active',
    company_name: 'Sunrise',
    ai_pause_minutes: 1440,
    sending_window: DEFAULT_SENDING_WINDOW,
  },
  sequence: { id: 'seq-1', is_active: true },
  enrollment: { ...enrollment, ...enrollmentOverrides },
  steps: [fixed('Hi {{first_name}}'), fixed('Again, {{first_name}}', 24)],
  lead,
  conversation: { started: true, opted_out: false, needs_handoff: false, ai_paused_until: null },
  optOutPending: false,
  consent: { required: false, status: 'none' },
  ...overrides,
});
const types = (events: { type: string }[]) => events.map((event) => event.type);

describe('decideDueStep', () => {
  it('sends the last step through the send decider and completes', () => {
    const events = decideDueStep(given(), 1, schedule);
    expect(types(events)).toEqual(['message.outbound_requested', 'sequence.step_sent', 'sequence.completed']);
    expect(events[0]).toMatchObject({
      data: {
        body: 'Again, Dana',
        source: 'sequence',
        sequence_step: { enrollment_id: 'enr-1', step_order: 1 },
      },
    });
    expect(events[1]).toMatchObject({ data: { next_step_at: null } });
  });

  it('skips a skip_if_replied step after a reply, and a skipped last step completes', () => {
    expect(types(decideDueStep(given({}, { replied: true }), 1, schedule))).toEqual([
      'sequence.step_skipped',
      'sequence.completed',
    ]);
  });

  it('does nothing for a stale claim, a paused account or sequence, or an opted-out number', () => {
    expect(decideDueStep(given(), 0, schedule)).toEqual([]);
    expect(decideDueStep(given({}, { next_step_at: new Date(now.getTime() + 1) }), 1, schedule)).toEqual([]);
    expect(decideDueStep(given({ sequence: { id: 'seq-1', is_active: false } }), 1, schedule)).toEqual([]);
    expect(decideDueStep(given({ sequence: undefined }), 1, schedule)).toEqual([]);
    const deactivated = given();
    deactivated.account = { ...deactivated.account, status: 'deactivated' };
    expect(decideDueStep(deactivated, 1, schedule)).toEqual([]);
    expect(
      decideDueStep(
        given({
          conversation: { started: true, opted_out: true, needs_handoff: false, ai_paused_until: null },
        }),
        1,
        schedule,
      ),
    ).toEqual([]);
  });

  it('holds a step due at night until the window opens, with the reason', () => {
    const night = new Date('2026-03-03T03:00:00Z');
    const events = decideDueStep(given({}, { next_step_at: night }), 1, { ...schedule, now: night });
    expect(events).toEqual([
      {
        type: 'sequence.step_held',
        data: {
          enrollment_id: 'enr-1',
          sequence_id: 'seq-1',
          lead_id: 'lead-1',
          phone: lead.phone,
          step_order: 1,
          stage: 'due',
          reason: 'quiet_hours',
          state: null,
          zone: 'America/New_York',
          next_step_at: '2026-03-03T13:00:00.000Z',
        },
      },
    ]);
  });

  it("holds a Florida lead's fourth step in 24 hours until the first of the three leaves them", () => {
    // Given a Miami lead who got three sequence messages this morning (EST),
    const miami = '+13055550100';
    const sent = ['2026-03-02T14:00:00Z', '2026-03-02T14:30:00Z', '2026-03-02T14:45:00Z'].map(
      (at) => new Date(at),
    );
    const state = given({ lead: { ...lead, phone: miami }, sent }, { phone: miami });
    // when the next step falls due at 10:00,
    const events = decideDueStep(state, 1, schedule);
    // then it is held until 09:00 tomorrow, 24 hours after the first.
    expect(events).toEqual([
      {
        type: 'sequence.step_held',
        data: expect.objectContaining({
          stage: 'due',
          reason: 'frequency_cap',
          state: 'FL',
          next_step_at: '2026-03-03T14:00:00.000Z',
        }),
      },
    ]);
    // With two of them, it goes out.
    expect(
      decideDueStep({ ...state, sent: sent.slice(1) }, 1, schedule).map((event) => event.type),
    ).toContain('message.outbound_requested');
  });

  it("schedules a Florida lead's next step after the cap when this one is its third", () => {
    const miami = '+13055550100';
    const sent = ['2026-03-02T13:00:00Z', '2026-03-02T14:00:00Z'].map((at) => new Date(at));
    const state = given(
      { lead: { ...lead, phone: miami }, sent, steps: [fixed('One'), fixed('Two'), fixed('Three', 0)] },
      { phone: miami, total_steps: 3 },
    );
    const events = decideDueStep(state, 1, schedule);
    expect(types(events)).toEqual(['message.outbound_requested', 'sequence.step_sent', 'sequence.step_held']);
    expect(events[1]!.data).toMatchObject({ next_step_at: '2026-03-03T13:00:00.000Z' });
    expect(events[2]!.data).toMatchObject({
      step_order: 2,
      reason: 'frequency_cap',
      next_step_at: '2026-03-03T13:00:00.000Z',
    });
  });

  it('hands an AI step to the agent, then moves on when it answers', () => {
    const ai: SequenceStep = {
      type: 'ai',
      message: null,
      instructions: 'Ask',
      delay_hours: 0,
      skip_if_replied: true,
    };
    const state = given({ steps: [fixed('Hi'), ai] });
    expect(decideDueStep(state, 1, schedule)).toMatchObject([
      { type: 'sequence.ai_step_requested', data: { step_order: 1, instructions: 'Ask' } },
    ]);
    const waiting = given({ steps: [fixed('Hi'), ai] }, { awaiting_ai: true });
    expect(types(decideAiStepOutcome(waiting, 1, { kind: 'failed' }, schedule))).toEqual([
      'sequence.step_skipped',
      'sequence.completed',
    ]);
    expect(decideAiStepOutcome(state, 1, { kind: 'failed' }, schedule)).toEqual([]);
  });
});

describe('decideSequences', () => {
  const sequence = {
    id: 's1',
    name: 'A',
    description: null,
    is_active: true,
    is_default: true,
    steps: [fixed('a')],
    steps_version: 1,
  };
  it('unsets the previous default', () => {
    const events = decideSequences({ type: 'CreateSequence', sequence: { ...sequence, id: 's2' } }, [
      sequence,
    ]);
    expect(events).toMatchObject([
      { type: 'sequence.updated', data: { sequence_id: 's1', changes: { is_default: false } } },
      { type: 'sequence.created', data: { sequence_id: 's2', is_default: true, steps_version: 1 } },
    ]);
  });

  it('makes a new steps version only when the steps change', () => {
    expect(
      decideSequences({ type: 'UpdateSequence', sequence_id: 's1', changes: { steps: [fixed('a')] } }, [
        sequence,
      ]),
    ).toEqual([]);
    expect(
      decideSequences({ type: 'UpdateSequence', sequence_id: 's1', changes: { steps: [fixed('b')] } }, [
        sequence,
      ]),
    ).toMatchObject([{ data: { changes: { steps_version: 2 } } }]);
  });
});

describe('decideUnenroll', () => {
  const state = (enrollmentOverrides: Partial<Enrollment> | null) => {
    const { steps: _steps, sequence: _sequence, ...rest } = given({}, enrollmentOverrides ?? {});
    return {
      ...rest,
      enrollment: enrollmentOverrides === null ? undefined : rest.enrollment,
      sequence: {
        id: 'seq-1',
        name: 'Welcome',
        description: null,
        is_active: true,
        is_default: false,
        steps: [fixed('Hi')],
        steps_version: 1,
      },
    };
  };

  it('ends an active enrollment, naming it', () => {
    expect(decideUnenroll(state({}))).toEqual({
      events: [
        {
          type: 'sequence.unenrolled',
          data: { enrollment_id: 'enr-1', sequence_id: 'seq-1', lead_id: 'lead-1', phone: lead.phone },
        },
      ],
      result: { action: 'unenrolled' },
    });
  });

  it('leaves a lead alone that is not in the sequence now', () => {
    for (const enrollmentState of [
      null,
      { status: 'completed' },
      { status: 'cancelled' },
      { status: 'opted_out' },
    ] as const) {
      expect(decideUnenroll(state(enrollmentState))).toEqual({
        events: [],
        result: { action: 'not_enrolled' },
      });
    }
  });

  it('is a 404 for an unknown sequence or lead', () => {
    expect(() => decideUnenroll({ ...state({}), sequence: undefined })).toThrow(/sequence/i);
    expect(() => decideUnenroll({ ...state({}), lead: undefined })).toThrow(/lead/i);
  });
});

describe('the consent rule on proactive steps', () => {
  const noConsent = { consent: { required: true, status: 'none' as const } };
  const heldForConsent = {
    type: 'sequence.step_held_for_consent',
    data: {
      enrollment_id: 'enr-1',
      sequence_id: 'seq-1',
      lead_id: 'lead-1',
      phone: lead.phone,
      step_order: 1,
      stage: 'due',
      reason: 'no_consent',
      due_at: now.toISOString(),
    },
  };

  it('holds a due step of a lead without consent where the account requires it, naming the rule', () => {
    // Given an account that requires consent and a lead who never gave it,
    // when its step falls due, then nothing is sent: the step is held for consent.
    expect(decideDueStep(given(noConsent), 1, schedule)).toEqual([heldForConsent]);
    // A revoked consent holds it as well.
    expect(decideDueStep(given({ consent: { required: true, status: 'revoked' } }), 1, schedule)).toEqual([
      heldForConsent,
    ]);
  });

  it('sends the step once consent is granted, or where the account does not require it', () => {
    for (const consent of [
      { required: true, status: 'granted' },
      { required: false, status: 'none' },
    ] as const) {
      expect(types(decideDueStep(given({ consent }), 1, schedule))).toEqual([
        'message.outbound_requested',
        'sequence.step_sent',
        'sequence.completed',
      ]);
    }
  });

  it('holds an AI step before asking the AI to write it', () => {
    const ai: SequenceStep = {
      type: 'ai',
      message: null,
      instructions: 'Ask',
      delay_hours: 0,
      skip_if_replied: true,
    };
    expect(decideDueStep(given({ ...noConsent, steps: [fixed('Hi'), ai] }), 1, schedule)).toEqual([
      heldForConsent,
    ]);
  });

  it('holds a step once: claimed again while held, it decides nothing new', () => {
    expect(decideDueStep(given(noConsent, { hold_reason: 'no_consent' }), 1, schedule)).toEqual([]);
  });

  it('holds for consent before the sending window: a grant, not a time, ends the wait', () => {
    const night = new Date('2026-03-03T03:00:00Z');
    expect(
      types(decideDueStep(given(noConsent, { next_step_at: night }), 1, { ...schedule, now: night })),
    ).toEqual(['sequence.step_held_for_consent']);
  });
});

describe('decideEnroll under the consent rule', () => {
  const sequence = {
    id: 'seq-1',
    name: 'Welcome',
    description: null,
    is_active: true,
    is_default: false,
    steps: [fixed('Hi {{first_name}}'), fixed('Again', 24)],
    steps_version: 1,
  };
  const enrollState = (consent: StepState['consent']): EnrollState => ({
    account: given().account,
    sequence,
    lead,
    conversation: undefined,
    enrollment: undefined,
    optOutPending: false,
    consent,
  });
  const ids = { enrollment_id: 'enr-2', message_id: 'msg-2' };

  it('enrolls a lead without consent but holds its step 0, with no time to send it', () => {
    // Given an account requiring consent and a lead without it,
    const { events, result } = decideEnroll(ids, enrollState({ required: true, status: 'none' }), schedule);
    // when it is enrolled in a sequence whose step 0 is due at once,
    // then it is enrolled, nothing is sent, and the answer says why it waits.
    expect(types(events)).toEqual(['sequence.enrolled', 'sequence.step_held_for_consent']);
    expect(result).toEqual({
      action: 'enrolled',
      message_sent: false,
      next_step_at: null,
      hold_reason: 'no_consent',
    });
  });

  it('sends step 0 at once to a lead with consent', () => {
    const { events, result } = decideEnroll(
      ids,
      enrollState({ required: true, status: 'granted' }),
      schedule,
    );
    expect(types(events)).toContain('message.outbound_requested');
    expect(result).toMatchObject({ message_sent: true, hold_reason: null });
  });

  it('leaves a delayed step 0 scheduled: consent given before it is due lets it go', () => {
    const delayed = { ...sequence, steps: [fixed('Later', 2), fixed('Again', 24)] };
    const { events, result } = decideEnroll(
      ids,
      { ...enrollState({ required: true, status: 'none' }), sequence: delayed },
      schedule,
    );
    expect(types(events)).toEqual(['sequence.enrolled']);
    expect(result).toMatchObject({ next_step_at: '2026-03-02T17:00:00.000Z', hold_reason: null });
  });

  it('says an active enrollment waits for consent when enrolled again', () => {
    const waiting = given({}, { hold_reason: 'no_consent', current_step: 0 }).enrollment!;
    const { result } = decideEnroll(
      ids,
      { ...enrollState({ required: true, status: 'none' }), enrollment: waiting },
      schedule,
    );
    expect(result).toEqual({
      action: 'already_enrolled',
      message_sent: false,
      next_step_at: null,
      hold_reason: 'no_consent',
    });
  });
});
