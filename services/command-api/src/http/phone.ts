import { normalizePhone } from '@leadline/domain';
import { z } from 'zod';

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
