import { ConfigError, loadConfig } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import { registrationConfigSchema } from './config';

describe('the carrier registration settings', () => {
  it('need our Trust Hub primary profile and notification address with Twilio, nothing more without', () => {
    expect(() => loadConfig(registrationConfigSchema, {})).not.toThrow();
    const twilio = { TWILIO_ACCOUNT_SID: 'AC1', TWILIO_AUTH_TOKEN: 'token' };
    expect(() => loadConfig(registrationConfigSchema, twilio)).toThrow(ConfigError);
    expect(() => loadConfig(registrationConfigSchema, twilio)).toThrow(
      /TWILIO_PRIMARY_PROFILE_SID[\s\S]*TWILIO_REGISTRATION_EMAIL/,
    );
    const config = loadConfig(registrationConfigSchema, {
      ...twilio,
      TWILIO_PRIMARY_PROFILE_SID: `BU${'a'.repeat(32)}`,
      TWILIO_REGISTRATION_EMAIL: 'compliance@isv.example',
    });
    expect(config.REGISTRATION_CHECK_MIN_SECONDS).toBe(15);
    expect(() =>
      loadConfig(registrationConfigSchema, {
        ...twilio,
        TWILIO_PRIMARY_PROFILE_SID: 'BU1',
        TWILIO_REGISTRATION_EMAIL: 'x@y.example',
      }),
    ).toThrow(/TWILIO_PRIMARY_PROFILE_SID/);
  });

  it('refuses to start in production without the key that opens the tax ids', () => {
    expect(() => loadConfig(registrationConfigSchema, { NODE_ENV: 'production' })).toThrow(
      /WEBHOOK_ENCRYPTION_KEYS/,
    );
  });
});
