import { describe, expect, it } from 'vitest';
import { decideAccountErasure, type AccountErasureLimits, type AccountErasureState } from './erase';

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
const limits = (overrides: Partial<AccountErasureLimits> = {}): AccountErasureLimits => ({
  now,
  batchSize: 2,
  lastBatch: 1,
  erasedNow: 0,
  finish: false,
  ...overrides,
});
const erased = (subject: string, leadId: string | null = null, phone = `erased:${subject}`) => ({
  type: 'lead.erased',
  data: { lead_id: leadId, phone, subject },
});

describe('erasing an account', () => {
  it('deactivates the account and erases a batch, each person by the phone while their key still opens', () => {
    const decision = decideAccountErasure(
      state({ people: [lead, inboundOnly], keyOnlySubjects: ['subject-log-only'] }),
      limits(),
    );
    expect(decision).toMatchObject({
      action: 'erase',
      events: [
        { type: 'account.deactivated', data: {} },
        erased(lead.subject, 'lead-1', lead.phone),
        erased(inboundOnly.subject, null, inboundOnly.phone),
      ],
      subjects: [lead.subject, inboundOnly.subject],
      phones: [lead.phone, inboundOnly.phone],
      leadIds: ['lead-1'],
      leadsErased: 2,
    });
  });

  it('finishes with the few left: each by the erased marker, then account.erased with the count', () => {
    const decision = decideAccountErasure(
      state({ status: 'deactivated', keyOnlySubjects: ['subject-log-only'] }),
      limits({ erasedNow: 2 }),
    );
    expect(decision).toEqual({
      action: 'finish',
      // The phone is not known: the erased marker names the subject, and the sealer leaves it as it is.
      events: [
        erased('subject-log-only'),
        { type: 'account.erased', data: { erased_at: now.toISOString(), leads_erased: 3 } },
      ],
      subjects: ['subject-log-only'],
      phones: [],
      leadIds: [],
      erasedAt: now,
      leadsErased: 3,
    });
  });

  it('erases a small account in one command, nobody named by phone', () => {
    expect(decideAccountErasure(state({ people: [lead] }), limits()).events).toEqual([
      { type: 'account.deactivated', data: {} },
      erased(lead.subject, 'lead-1'),
      { type: 'account.erased', data: { erased_at: now.toISOString(), leads_erased: 1 } },
    ]);
  });

  it('finishes with everyone left when told to, however many', () => {
    const decision = decideAccountErasure(
      state({ people: [lead, inboundOnly], keyOnlySubjects: ['subject-log-only'] }),
      limits({ finish: true }),
    );
    expect(decision.action).toBe('finish');
    expect(decision.events.filter((event) => event.type === 'lead.erased')).toHaveLength(3);
  });

  it('erases an account that holds nobody: deactivated and marked erased', () => {
    expect(decideAccountErasure(state(), limits()).events).toEqual([
      { type: 'account.deactivated', data: {} },
      { type: 'account.erased', data: { erased_at: now.toISOString(), leads_erased: 0 } },
    ]);
  });

  const erasedAt = new Date('2026-02-01T00:00:00Z');
  const before = { status: 'deactivated' as const, erasedAt, leadsErased: 2 };

  it('answers a repeated request with the first erasure, appending nothing', () => {
    expect(decideAccountErasure(state(before), limits())).toEqual({
      action: 'already_erased',
      events: [],
      erasedAt,
      leadsErased: 2,
    });
  });

  it('erases what appeared since, keeping the first erasure time and adding to the count', () => {
    expect(decideAccountErasure(state({ ...before, people: [lead] }), limits()).events).toEqual([
      erased(lead.subject, 'lead-1'),
      { type: 'account.erased', data: { erased_at: erasedAt.toISOString(), leads_erased: 3 } },
    ]);
    // A team member invited since: their key and row go with another account.erased.
    expect(decideAccountErasure(state({ ...before, holdsOtherPersonalData: true }), limits()).events).toEqual(
      [{ type: 'account.erased', data: { erased_at: erasedAt.toISOString(), leads_erased: 2 } }],
    );
  });
});
