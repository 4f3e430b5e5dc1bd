import { normalizePhone } from '@leadline/domain';
import { z } from 'zod';

export type ValueType = 'text' | 'email' | 'phone' | 'number' | 'date';

export type Validation = { ok: true; value: string } | { ok: false; error: string };

const email = z.email();
const MAX_TEXT = 500;

/**
 * The model proposes, this disposes: only a value valid for the item's type is recorded, in a
 * canonical form (emails lowercased, phones E.164 by the leads' own normalization, dates
 * YYYY-MM-DD, numbers as plain decimals).
 */
export function validateValue(type: ValueType, raw: string): Validation {
  const value = raw.trim();
  if (value.length === 0) return { ok: false, error: 'The value is empty.' };
  switch (type) {
    case 'text':
      return value.length > MAX_TEXT
        ? { ok: false, error: `Text values are at most ${MAX_TEXT} characters.` }
        : { ok: true, value };
    case 'email':
      return email.safeParse(value).success
        ? { ok: true, value: value.toLowerCase() }
        : { ok: false, error: `"${value}" is not a valid email address.` };
    case 'phone': {
      const phone = normalizePhone(value);
      return phone
        ? { ok: true, value: phone }
        : { ok: false, error: `"${value}" is not a valid phone number.` };
    }
    case 'number': {
      const plain = value.replace(/[$,\s]/g, '');
      return /^-?\d+(\.\d+)?$/.test(plain)
        ? { ok: true, value: String(Number(plain)) }
        : { ok: false, error: `"${value}" is not a number; give digits only, such as 85000.` };
    }
    case 'date': {
      const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
      const date = match && new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
      return date && date.toISOString().slice(0, 10) === value
        ? { ok: true, value }
        : { ok: false, error: `"${value}" is not a date in the form YYYY-MM-DD.` };
    }
    default: {
      const unknownType: never = type;
      return { ok: false, error: `Unknown type ${String(unknownType)}` };
    }
  }
}
