import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { z } from 'zod';

/**
 * E.164 or 10-digit US numbers, normalized to E.164 (10 digits mean +1, per our design decision).
 * "Possible" (a plausible length for its country) rather than "valid", so test numbers such as
 * +1 555 01xx are accepted. Returns undefined for anything else.
 */
export function normalizePhone(input: string): string | undefined {
  const parsed = parsePhoneNumberFromString(input.trim(), 'US');
  return parsed?.isPossible() ? parsed.number : undefined;
}

export const phoneNumberSchema = z
  .string()
  .transform((value, context) => {
    const normalized = normalizePhone(value);
    if (!normalized) {
      context.addIssue({
        code: 'custom',
        message: 'Must be a phone number in E.164 form (+15551234567) or 10 US digits.',
      });
      return z.NEVER;
    }
    return normalized;
  })
  .meta({
    description: 'E.164, or 10 digits meaning +1; stored and answered as E.164.',
    pattern: '^\\+?[0-9 ().-]{10,25}$',
    maxLength: 25,
    examples: ['+15125550123', '5125550123'],
  });
