import { z } from 'zod';
import { twilioCredentials, type TelephonyConfig } from '../config';

/**
 * The carriers' sending rule (see registrationHold): whether an account's US long code sends only
 * opt-out confirmations and HELP answers until its campaign is approved. Unset, it is on in production
 * with Twilio (where the carriers filter unregistered traffic) and off elsewhere, so the local
 * provider's demo sends at once; `true` or `false` decides it anywhere.
 */
export const registrationEnforcementConfig = {
  NODE_ENV: z.string().default('development'),
  CARRIER_REGISTRATION_ENFORCED: z
    .enum(['true', 'false'])
    .optional()
    .transform((value) => (value === undefined ? undefined : value === 'true')),
};

type EnforcementSettings = TelephonyConfig & {
  NODE_ENV: string;
  CARRIER_REGISTRATION_ENFORCED?: boolean | undefined;
};

export function registrationEnforced(config: EnforcementSettings): boolean {
  return (
    config.CARRIER_REGISTRATION_ENFORCED ??
    (config.NODE_ENV === 'production' && twilioCredentials(config) !== undefined)
  );
}

/** Turning the rule off where carriers enforce it is a setting production refuses (see guardUnsafeSettings). */
export function registrationEnforcementRisks(config: EnforcementSettings) {
  return config.CARRIER_REGISTRATION_ENFORCED === false && twilioCredentials(config)
    ? [
        {
          setting: 'CARRIER_REGISTRATION_ENFORCED',
          risk: 'is false with Twilio: accounts text from US long codes before their campaign is approved, which carriers filter',
        },
      ]
    : [];
}
