import { describe, expect, it } from 'vitest';
import { decideAccountErasure, type AccountErasureState } from './erase';

const now = new Date('2026-03-01T12:00:00Z');
const lead = { phone: '+15125550100', subject: 'subject-lead', leadId: 'lead-1' };
const inboundOnly = { phone: '+15125550101', subject: 'subject-inbound', leadId: null };
const state = (overrides: Partial<AccountErasureState> = {}): AccountErasureState => ({
  status: 'active',
  erasedAt: null,
  leadsErased: 0,
  people: [],
  keyOnlySubjects: [],
  holdsOtherPersonalData: false,
  ...overrides,
});

describe('erasing an account', () => {
  it('deactivates the account and erases each person: a lead, a number without one, one known by hash', () => {
    const decision = decideAccountErasure(
      state({ people: [lead, inboundOnly], keyOnlySubjects: ['subject-log-only'] }),
      { now, batchSize: 10, erasedNow: 0 },
    );
    expect(decision).toEqual({
      action: 'erase',
      events: [
        { type: 'account.deactivated', data: {} },
        { type: 'lead.erased', data: { lead_id: 'lead-1', phone: lead.phone, subject: lead.subject } },
        {
          type: 'lead.erased',
          data: { lead_id: null, phone: inboundOnly.phone, subject: inboundOnly.subject },
        },
        // The phone is not known: the erased marker names the subject, and the sealer leaves it as it is.
        {
          type: 'lead.erased',
          data: { lead_id: null, phone: 'erased:subject-log-only', subject: 'subject-log-only' },
        },
      ],
      subjects: [lead.subject, inboundOnly.subject, 'subject-log-only'],
      phones: [lead.phone, inboundOnly.phone],
      leadIds: ['lead-1'],
    });
  });

  it('erases at most a batch per command, and does not deactivate twice', () => {
    const decision = decideAccountErasure(state({ status: 'deactivated', people: [lead, inboundOnly] }), {
      now,
      batchSize: 1,
      erasedNow: 0,
    });
    expect(decision.events).toEqual([
      { type: 'lead.erased', data: { lead_id: 'lead-1', phone: lead.phone, subject: lead.subject } },
    ]);
  });

  it('finishes with account.erased once nobody is left, counting the people the request erased', () => {
    expect(
      decideAccountErasure(state({ status: 'deactivated' }), { now, batchSize: 10, erasedNow: 3 }),
    ).toEqual({
      action: 'finish',
      events: [{ type: 'account.erased', data: { erased_at: now.toISOString(), leads_erased: 3 } }],
      erasedAt: now,
      leadsErased: 3,
    });
  });

  it('erases an account that holds nobody: deactivated and marked erased', () => {
    expect(decideAccountErasure(state(), { now, batchSize: 10, erasedNow: 0 }).events).toEqual([
      { type: 'account.deactivated', data: {} },
      { type: 'account.erased', data: { erased_at: now.toISOString(), leads_erased: 0 } },
    ]);
  });

  const erasedAt = new Date('2026-02-01T00:00:00Z');
  const erased = { status: 'deactivated' as const, erasedAt, leadsErased: 2 };

  it('answers a repeated request with the first erasure, appending nothing', () => {
    expect(decideAccountErasure(state(erased), { now, batchSize: 10, erasedNow: 0 })).toEqual({
      action: 'already_erased',
      events: [],
      erasedAt,
      leadsErased: 2,
    });
  });

  it('erases what appeared since, keeping the first erasure time and adding to the count', () => {
    expect(
      decideAccountErasure(state({ ...erased, people: [lead] }), { now, batchSize: 10, erasedNow: 0 }).action,
    ).toBe('erase');
    expect(decideAccountErasure(state(erased), { now, batchSize: 10, erasedNow: 1 }).events).toEqual([
      { type: 'account.erased', data: { erased_at: erasedAt.toISOString(), leads_erased: 3 } },
    ]);
    // A team member invited since: their key and row go with another account.erased.
    expect(
      decideAccountErasure(state({ ...erased, holdsOtherPersonalData: true }), {
        now,
        batchSize: 10,
        erasedNow: 0,
      }).action,
    ).toBe('finish');
  });
});
