import { describe, expect, it } from 'vitest';
import { decideErasure } from './erase';

const phone = '+15125550100';
const subject = 'subject-hash';

describe('erasing a person', () => {
  it('erases a lead: one lead.erased naming the lead, the phone and the subject', () => {
    expect(decideErasure({ phone, subject, leadId: 'lead-1', holdsData: true, erasedAt: null })).toEqual({
      action: 'erase',
      events: [{ type: 'lead.erased', data: { lead_id: 'lead-1', phone, subject } }],
    });
  });

  it('erases a number whose lead is gone but whose conversation or log data is left', () => {
    const decision = decideErasure({ phone, subject, leadId: null, holdsData: true, erasedAt: null });
    expect(decision.events).toEqual([{ type: 'lead.erased', data: { lead_id: null, phone, subject } }]);
  });

  it('erases again a person who came back after an earlier erasure', () => {
    const erasedAt = new Date('2026-01-01T00:00:00Z');
    expect(decideErasure({ phone, subject, leadId: null, holdsData: true, erasedAt }).action).toBe('erase');
  });

  it('answers a repeated request as done, appending nothing', () => {
    const erasedAt = new Date('2026-01-01T00:00:00Z');
    expect(decideErasure({ phone, subject, leadId: null, holdsData: false, erasedAt })).toEqual({
      action: 'already_erased',
      events: [],
      erasedAt,
    });
  });

  it('refuses a phone the account never had', () => {
    expect(() => decideErasure({ phone, subject, leadId: null, holdsData: false, erasedAt: null })).toThrow(
      expect.objectContaining({ status: 404, code: 'lead_not_found' }),
    );
  });
});
