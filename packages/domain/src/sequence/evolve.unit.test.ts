import type { NewEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import type { Lead } from '../lead/state';
import { decideDueStep, type Enrollment, type StepState } from './decide';
import type { SequenceStep } from './definition';
import { evolveEnrollment, evolveStepState } from './evolve';
import { DEFAULT_SENDING_WINDOW } from './sending-window';

// Monday 15:00 UTC: 10:00 in New York, inside the sending window.
const now = new Date('2026-03-02T15:00:00Z');
const fixed = (message: string): SequenceStep => ({
  type: 'fixed',
  message,
  instructions: null,
  delay_hours: 0,
  skip_if_replied: false,
});
const lead: Lead = {
  lead_id: 'lead-1',
  phone: '+12125550100',
  name: 'Dana Scully',
  first_name: 'Dana',
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
const enrollment = (id: string, overrides: Partial<Enrollment> = {}): Enrollment => ({
  id,
  sequence_id: `seq-${id}`,
  sequence_name: 'Welcome',
  lead_id: lead.lead_id,
  phone: lead.phone,
  status: 'active',
  steps_version: 1,
  total_steps: 2,
  current_step: 0,
  next_step_at: now,
  awaiting_ai: false,
  replied: false,
  hold_reason: null,
  ...overrides,
});
const stepState = (id: string, overrides: Partial<StepState> = {}): StepState => ({
  account: {
    status: 'active',
    company_name: 'Sunrise',
    ai_pause_minutes: 1440,
    sending_window: DEFAULT_SENDING_WINDOW,
  },
  sequence: { id: `seq-${id}`, is_active: true },
  enrollment: enrollment(id),
  steps: [fixed('Hi {{first_name}}'), fixed('Again')],
  lead,
  conversation: undefined,
  sent: [],
  optOutPending: false,
  consent: { required: false, status: 'none' },
  ...overrides,
});
const ref = { enrollment_id: 'e1', sequence_id: 'seq-e1', lead_id: lead.lead_id, phone: lead.phone };
const types = (events: readonly NewEvent[]) => events.map((event) => event.type);

describe('an enrollment, given its events', () => {
  const sent: NewEvent = {
    type: 'sequence.step_sent',
    data: { ...ref, step_order: 0, message_id: 'm1', next_step_at: '2026-03-03T15:00:00.000Z' },
  };

  it('moves past a step done, once: the same step again (a redelivery) changes nothing', () => {
    const once = evolveEnrollment(enrollment('e1'), sent);
    expect(once).toMatchObject({ current_step: 1, next_step_at: new Date('2026-03-03T15:00:00Z') });
    expect(evolveEnrollment(once, sent)).toEqual(once);
  });

  it('ignores a step of another enrollment', () => {
    expect(evolveEnrollment(enrollment('e2'), sent)).toEqual(enrollment('e2'));
  });

  it('stops every active enrollment of a number that opts out, and none of another number', () => {
    const optOut: NewEvent = {
      type: 'lead.opted_out',
      data: { ...ref, lead_name: null, keyword: 'STOP', message_id: 'm2' },
    };
    expect(evolveEnrollment(enrollment('e1'), optOut)).toMatchObject({
      status: 'opted_out',
      next_step_at: null,
    });
    expect(evolveEnrollment(enrollment('e1', { status: 'completed' }), optOut).status).toBe('completed');
    expect(evolveEnrollment(enrollment('e3', { phone: '+12125550199' }), optOut).status).toBe('active');
  });

  it('awaits the AI for its step only while active and not awaiting already', () => {
    const requested: NewEvent = {
      type: 'sequence.ai_step_requested',
      data: {
        enrollment_id: 'e1',
        sequence_id: 'seq-e1',
        step_order: 0,
        phone: lead.phone,
        instructions: '',
      },
    };
    expect(evolveEnrollment(enrollment('e1'), requested)).toMatchObject({
      awaiting_ai: true,
      next_step_at: null,
    });
    expect(evolveEnrollment(enrollment('e1', { status: 'cancelled' }), requested).awaiting_ai).toBe(false);
  });

  it('is removed with its lead, whatever its status, and stays removed', () => {
    const deleted: NewEvent = { type: 'lead.deleted', data: { lead_id: lead.lead_id, phone: lead.phone } };
    const removed = evolveEnrollment(enrollment('e1', { status: 'completed' }), deleted);
    expect(removed.status).toBe('removed');
    expect(evolveEnrollment(removed, deleted)).toEqual(removed);
  });
});

describe('a step state, evolved by the steps decided before it in one command', () => {
  it('sends a lead in two sequences both steps, starting the conversation and contacting the lead once', () => {
    const first = decideDueStep(stepState('e1'), 0, { now, hourSeconds: 3600, messageId: 'm1' });
    expect(types(first)).toEqual([
      'conversation.started',
      'message.outbound_requested',
      'lead.status_changed',
      'sequence.step_sent',
    ]);
    const second = first.reduce((state, event) => evolveStepState(state, event, now), stepState('e2'));
    expect(second.conversation).toMatchObject({ started: true });
    expect(second.lead?.status).toBe('contacted');
    expect(second.sent).toEqual([now]);
    expect(second.enrollment).toEqual(enrollment('e2'));
    expect(types(decideDueStep(second, 0, { now, hourSeconds: 3600, messageId: 'm2' }))).toEqual([
      'message.outbound_requested',
      'sequence.step_sent',
    ]);
  });

  it('is not changed by another number’s events', () => {
    const other = stepState('e9', {
      enrollment: enrollment('e9', { phone: '+12125550199', lead_id: 'lead-9' }),
      lead: { ...lead, lead_id: 'lead-9', phone: '+12125550199' },
    });
    const first = decideDueStep(stepState('e1'), 0, { now, hourSeconds: 3600, messageId: 'm1' });
    expect(first.reduce((state, event) => evolveStepState(state, event, now), other)).toEqual(other);
  });
});

describe('an enrollment held for consent', () => {
  const held: NewEvent = {
    type: 'sequence.step_held_for_consent',
    data: { ...ref, step_order: 0, stage: 'ai_send', reason: 'no_consent', due_at: now.toISOString() },
  };
  const granted: NewEvent = {
    type: 'lead.consent_granted',
    data: {
      consent_id: 'c1',
      phone: lead.phone,
      lead_id: lead.lead_id,
      method: 'web_form',
      captured_at: now.toISOString(),
      source_url: null,
      ip_address: null,
      disclosure_text: null,
      evidence_url: null,
      recorded_via: 'api',
    },
  };

  it('waits for consent, its step given back to the sequencer (an AI one too), and is due once granted', () => {
    // Given an enrollment whose AI step was being written,
    const writing = enrollment('e1', { awaiting_ai: true, next_step_at: null });
    // when its message is held for consent, it waits for consent, overdue since the hold;
    const waiting = evolveEnrollment(writing, held);
    expect(waiting).toMatchObject({ hold_reason: 'no_consent', awaiting_ai: false, next_step_at: now });
    // then consent granted to its number lifts the hold (one of another number does not).
    expect(evolveEnrollment(waiting, granted)).toMatchObject({ hold_reason: null, next_step_at: now });
    const elsewhere = { ...granted, data: { ...granted.data, phone: '+12125550199' } } as NewEvent;
    expect(evolveEnrollment(waiting, elsewhere).hold_reason).toBe('no_consent');
  });

  it('is due again when the account stops requiring consent, and only then', () => {
    const waiting = evolveEnrollment(enrollment('e1'), held);
    const off: NewEvent = { type: 'account.updated', data: { consent_required: false } };
    const on: NewEvent = { type: 'account.updated', data: { consent_required: true } };
    expect(evolveEnrollment(waiting, off).hold_reason).toBeNull();
    expect(evolveEnrollment(waiting, on).hold_reason).toBe('no_consent');
    expect(evolveEnrollment(waiting, { type: 'account.updated', data: { name: 'x' } })).toEqual(waiting);
  });

  it('names a time-bound hold until the step goes out', () => {
    const night: NewEvent = {
      type: 'sequence.step_held',
      data: {
        ...ref,
        step_order: 0,
        stage: 'due',
        reason: 'quiet_hours',
        state: null,
        zone: 'America/New_York',
        next_step_at: '2026-03-03T13:00:00.000Z',
      },
    };
    const sent: NewEvent = {
      type: 'sequence.step_sent',
      data: { ...ref, step_order: 0, message_id: 'm1', next_step_at: null },
    };
    const waiting = evolveEnrollment(enrollment('e1'), night);
    expect(waiting.hold_reason).toBe('quiet_hours');
    expect(evolveEnrollment(waiting, sent).hold_reason).toBeNull();
  });

  it('lets a step decided after a grant in the same command go out', () => {
    const state = stepState('e1', { consent: { required: true, status: 'none' } });
    expect(types(decideDueStep(state, 0, { now, hourSeconds: 3600, messageId: 'm1' }))).toEqual([
      'sequence.step_held_for_consent',
    ]);
    const after = evolveStepState(state, granted, now);
    expect(after.consent).toEqual({ required: true, status: 'granted' });
    expect(types(decideDueStep(after, 0, { now, hourSeconds: 3600, messageId: 'm1' }))).toContain(
      'message.outbound_requested',
    );
  });
});
