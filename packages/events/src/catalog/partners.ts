import { z } from 'zod';
import { defineEvent } from '../define';

export const partnerCreated = defineEvent('partner.created', {
  topic: 'partner',
  data: z.object({ name: z.string() }),
});
