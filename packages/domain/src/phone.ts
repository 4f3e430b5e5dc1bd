import { parsePhoneNumberFromString } from 'libphonenumber-js';

/**
 * E.164 or 10-digit US numbers, normalized to E.164 (10 digits mean +1, per our design decision).
 * "Possible" (a plausible length for its country) rather than "valid", so test numbers such as
 * +1 555 01xx are accepted. Returns undefined for anything else.
 */
export function normalizePhone(input: string): string | undefined {
  const parsed = parsePhoneNumberFromString(input.trim(), 'US');
  return parsed?.isPossible() ? parsed.number : undefined;
}
