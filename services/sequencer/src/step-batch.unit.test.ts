import { DEFAULT_SENDING_WINDOW, type Enrollment, type StepState } from '@leadline/domain';
import { describe, expect, it } from 'vitest';
import type { DueStep } from './claims';
import { decideStepBatch } from './step-batch';

// Monday 15:00 UTC: 10:00 in New York, inside the sending window.
const now = new Date('2026-03-02T15:00:00Z');
const night = new Date('2026-03-03T03:00:00Z');
let ids = 0;
const context = { now, hourSeconds: 3600, newId: () => `id-${++ids}` };

const enrollment = (id: string, phone: string): Enrollment => ({
  id,
  sequence_id: `seq-${id}`,
  sequence_name: 'Welcome',
  lead_id: `lead-${phone}`,
  phone,
  status: 'active',
  steps_version: 1,
  total_steps: 2,
  current_step: 0,
  next_step_at: now,
  awaiting_ai: false,
  replied: false,
  hold_reason: null,
});
const stateOf = (id: string, phone: string, overrides: Partial<StepState> = {}): StepState => ({
  account: {
    status: 'active',
    company_name: 'Sunrise',
    ai_pause_minutes: 1440,
    sending_window: DEFAULT_SENDING_WINDOW,
  },
  sequence: { id: `seq-${id}`, is_active: true },
  enrollment: enrollment(id, phone),
  steps: [
    { type: 'fixed', message: 'x'.repeat(1000), instructions: null, delay_hours: 0, skip_if_replied: false },
    { type: 'fixed', message: 'Again', instructions: null, delay_hours: 24, skip_if_replied: false },
  ],
  lead: {
    lead_id: `lead-${phone}`,
    phone,
    name: null,
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
  },
  conversation: undefined,
  sent: [],
  optOutPending: false,
  consent: { required: false, status: 'none' },
  ...overrides,
});
const step = (id: string): DueStep => ({
  enrollment_id: id,
  step_order: 0,
  account_id: 'a1',
  partner_id: 'p1',
  next_step_at: now,
});

describe('a batch of one account’s due steps', () => {
  it('stops at the append budget, leaving the rest for the next command', () => {
    const phones = ['+12125550101', '+12125550102', '+12125550103'];
    const states = new Map(phones.map((phone, i) => [`e${i}`, stateOf(`e${i}`, phone)] as const));
    // Each step's events carry its 1,000-character message twice (about 4.6 KB with their envelopes):
    // the budget is passed after the second step.
    const batch = decideStepBatch(
      phones.map((_, i) => step(`e${i}`)),
      states,
      { ...context, budgetBytes: 6000 },
    );
    expect(batch.undecided.map((due) => due.enrollment_id)).toEqual(['e2']);
    expect(batch.events.filter((event) => event.type === 'sequence.step_sent')).toHaveLength(2);
    // Each step's events stay traced to their own enrollment.
    expect(new Set(batch.events.map((event) => event.correlationId))).toEqual(new Set(['e0', 'e1']));
  });

  it('releases a step held to a later time, and one already held for consent, but keeps a stale claim', () => {
    const states = new Map([
      [
        'night',
        stateOf('night', '+12125550104', {
          enrollment: { ...enrollment('night', '+12125550104'), next_step_at: night },
        }),
      ],
      [
        'held',
        stateOf('held', '+12125550105', {
          consent: { required: true, status: 'none' },
          enrollment: { ...enrollment('held', '+12125550105'), hold_reason: 'no_consent' },
        }),
      ],
      [
        'stale',
        stateOf('stale', '+12125550106', {
          enrollment: { ...enrollment('stale', '+12125550106'), current_step: 1 },
        }),
      ],
    ]);
    const batch = decideStepBatch([step('held'), step('stale')], states, { ...context, now: night });
    expect(batch.events).toEqual([]);
    expect(batch.release.map((due) => due.enrollment_id)).toEqual(['held']);
    const atNight = decideStepBatch([step('night')], states, { ...context, now: night });
    expect(atNight.events.map((event) => event.type)).toEqual(['sequence.step_held']);
    expect(atNight.release.map((due) => due.enrollment_id)).toEqual(['night']);
  });
});
