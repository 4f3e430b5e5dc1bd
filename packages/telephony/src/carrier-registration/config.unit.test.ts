import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { telephonyConfig } from '../config';
import { registrationEnforced, registrationEnforcementConfig, registrationEnforcementRisks } from './config';

const settings = z.object({ ...telephonyConfig.shape, ...registrationEnforcementConfig });
const twilio = { TWILIO_ACCOUNT_SID: 'AC1', TWILIO_AUTH_TOKEN: 'token' };

describe('enforcing the carriers sending rule', () => {
  it('is on in production with Twilio, off elsewhere, unless it is set', () => {
    expect(registrationEnforced(settings.parse({ NODE_ENV: 'production', ...twilio }))).toBe(true);
    expect(registrationEnforced(settings.parse({ NODE_ENV: 'production' }))).toBe(false);
    expect(registrationEnforced(settings.parse({ ...twilio }))).toBe(false);
    expect(registrationEnforced(settings.parse({ CARRIER_REGISTRATION_ENFORCED: 'true' }))).toBe(true);
    expect(
      registrationEnforced(
        settings.parse({ NODE_ENV: 'production', ...twilio, CARRIER_REGISTRATION_ENFORCED: 'false' }),
      ),
    ).toBe(false);
    expect(() => settings.parse({ CARRIER_REGISTRATION_ENFORCED: 'yes' })).toThrow();
  });

  it('names turning it off with Twilio as an unsafe setting', () => {
    expect(
      registrationEnforcementRisks(settings.parse({ ...twilio, CARRIER_REGISTRATION_ENFORCED: 'false' })),
    ).toEqual([expect.objectContaining({ setting: 'CARRIER_REGISTRATION_ENFORCED' })]);
    expect(registrationEnforcementRisks(settings.parse({ CARRIER_REGISTRATION_ENFORCED: 'false' }))).toEqual(
      [],
    );
    expect(registrationEnforcementRisks(settings.parse({ ...twilio }))).toEqual([]);
  });
});
