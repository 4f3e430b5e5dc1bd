import type { NewEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { decideConsentGrants, evolveConsent, heldForConsent, type ConsentGrant } from './decide';

const now = new Date('2026-03-02T15:00:00Z');
const phone = '+15125550123';
const grant: ConsentGrant = {
  method: 'web_form',
  captured_at: '2026-03-01T12:00:00.000Z',
  source_url: 'https://sunrise.example/apply',
  ip_address: '203.0.113.7',
  disclosure_text: 'I agree to receive texts from Sunrise Mortgage.',
  evidence_url: null,
};
let ids = 0;
const context = { newId: () => `c${++ids}`, now, via: 'api' as const };

describe('recording consent', () => {
  it('records a grant with its evidence, once: the same grant again records nothing', () => {
    // Given a lead with no consent, when the partner records a grant,
    const first = decideConsentGrants([{ phone, lead_id: 'l1', grant, field: 'body' }], new Map(), context);
    // then it is one event carrying every piece of evidence,
    expect(first).toEqual({
      recorded: [true],
      events: [
        {
          type: 'lead.consent_granted',
          data: { consent_id: 'c1', phone, lead_id: 'l1', ...grant, recorded_via: 'api' },
        },
      ],
    });
    // and recording it again (a re-import, a retry) adds nothing to the trail; another grant does.
    const known = new Map([[phone, [grant]]]);
    const again = decideConsentGrants(
      [
        {
          phone,
          lead_id: 'l1',
          grant: { ...grant, captured_at: '2026-03-01T13:00:00+01:00' },
          field: 'body',
        },
        { phone, lead_id: 'l1', grant: { ...grant, method: 'paper' }, field: 'body' },
        { phone, lead_id: 'l1', grant: { ...grant, method: 'paper' }, field: 'body' },
      ],
      known,
      context,
    );
    expect(again.recorded).toEqual([false, true, false]);
    expect(again.events).toHaveLength(1);
  });

  it('refuses consent given in the future as a 400 naming the field, recording nothing', () => {
    const future = { ...grant, captured_at: '2026-03-02T15:06:00.000Z' };
    expect(() =>
      decideConsentGrants(
        [{ phone, lead_id: 'l1', grant: future, field: 'body.consent' }],
        new Map(),
        context,
      ),
    ).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'validation_failed',
        details: { errors: [{ field: 'body.consent.captured_at', message: 'Must not be in the future.' }] },
      }),
    );
    // A clock a little ahead of ours is not the future.
    const skewed = { ...grant, captured_at: '2026-03-02T15:04:00.000Z' };
    expect(
      decideConsentGrants([{ phone, lead_id: 'l1', grant: skewed, field: 'body' }], new Map(), context)
        .recorded,
    ).toEqual([true]);
  });
});

describe('the consent rule', () => {
  it('holds proactive messages only where the account requires consent and the number has none', () => {
    expect(heldForConsent({ required: true, status: 'none' })).toBe(true);
    expect(heldForConsent({ required: true, status: 'revoked' })).toBe(true);
    expect(heldForConsent({ required: true, status: 'granted' })).toBe(false);
    expect(heldForConsent({ required: false, status: 'revoked' })).toBe(false);
  });

  it('follows STOP and START texted by the number', () => {
    const ref = { phone, lead_id: 'l1', lead_name: null, message_id: 'm1' };
    const stop: NewEvent = { type: 'lead.opted_out', data: { ...ref, keyword: 'STOP' } };
    const start: NewEvent = { type: 'lead.opted_in', data: { ...ref, keyword: 'START' } };
    const granted = { required: true, status: 'granted' } as const;
    expect(evolveConsent(granted, stop).status).toBe('revoked');
    expect(evolveConsent(evolveConsent(granted, stop), start).status).toBe('granted');
  });
});
