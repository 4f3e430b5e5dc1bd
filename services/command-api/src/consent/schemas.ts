import { isIP } from 'node:net';
import type { ConsentGrant } from '@leadline/domain';
import { consentMethods } from '@leadline/events';
import { z } from 'zod';

import { e164, httpUrl, PAGE_MAX, timestamp, uuid } from '../http/fields';
import { pageFields, paginationQuery } from '../http/pagination';

const DISCLOSURE_MAX = 5000;

/** A time a client sends: ISO 8601 with an offset, bounded like every request string. */
const instant = () => z.iso.datetime({ offset: true }).max(40).meta({ example: '2026-01-15T14:30:00.000Z' });

const methodDescription =
  'How consent was given: `web_form` (a form on a web page: give `source_url`, `ip_address` and ' +
  '`disclosure_text`), `paper` (a signed form: give `evidence_url`), `verbal` (on a call: a recording as ' +
  '`evidence_url`), `sms_keyword` (a keyword texted to another number of yours; keywords texted to the ' +
  "account's number are recorded by themselves), `import` (consent held in another system you are " +
  'importing from).';

export const consentGrantBody = z
  .strictObject({
    method: z.enum(consentMethods).describe(methodDescription),
    captured_at: instant().describe(
      'When the lead gave consent (not when you record it); not in the future. A grant captured before ' +
        "the number's latest revocation is kept in the trail and leaves the number revoked.",
    ),
    source_url: httpUrl.optional().describe('The page the consent was given on.'),
    // One string (not a union of formats) so every client generator maps it to its plain string type.
    ip_address: z
      .string()
      .max(45)
      .refine((value) => isIP(value) !== 0, 'Must be an IPv4 or IPv6 address.')
      .optional()
      .describe('The address the form was submitted from: IPv4 or IPv6.'),
    disclosure_text: z
      .string()
      .trim()
      .min(1)
      .max(DISCLOSURE_MAX)
      .optional()
      .describe('The exact consent language the lead was shown or read, word for word.'),
    evidence_url: httpUrl
      .optional()
      .describe('Where the proof is kept: a signed form, a recording, a screenshot.'),
  })
  .meta({
    id: 'ConsentGrant',
    description:
      "A lead's consent to be texted, with its evidence. Recording the same grant again (every field equal) records nothing.",
  });

/** A grant as the domain takes it: fields not given are null, the instant in UTC. */
export function toConsentGrant(body: z.infer<typeof consentGrantBody>): ConsentGrant {
  return {
    method: body.method,
    captured_at: new Date(body.captured_at).toISOString(),
    source_url: body.source_url ?? null,
    ip_address: body.ip_address ?? null,
    disclosure_text: body.disclosure_text ?? null,
    evidence_url: body.evidence_url ?? null,
  };
}

const consentStatus = z
  .enum(['granted', 'revoked', 'none'])
  .describe(
    'The record captured last decides: `granted` by a grant or START, `revoked` by an opt-out texted; `none` without any record.',
  );

export const consentRecordResponse = z
  .object({
    id: uuid(),
    phone: e164(),
    lead_name: z.string().nullable().describe('The lead with this phone now; null once it is deleted.'),
    action: z.enum(['granted', 'revoked']),
    method: z
      .enum([...consentMethods, 'sms_free_text', 'sms_ai'])
      .describe(
        'How it was given, or revoked. Texted: `sms_keyword` (STOP, START and their variants), `sms_free_text` (a sentence read as a revocation, such as "please stop texting me"), `sms_ai` (a sentence the AI read as one).',
      ),
    captured_at: timestamp().describe(
      'When it was given or revoked (a texted one: when its message arrived).',
    ),
    recorded_at: timestamp().describe('When it was recorded here.'),
    recorded_via: z
      .enum(['api', 'import', 'bulk_import', 'sms'])
      .describe(
        '`api`: POST …/consent; `import` / `bulk_import`: the `consent` of a lead import; `sms`: texted to the account.',
      ),
    recorded_by: z
      .string()
      .describe(
        'Who recorded it: `partner_key:<key id>`, `embed_user:<name>` (the embedded dashboard) or `system:<service>` (a text).',
      ),
    source_url: z.url().nullable(),
    ip_address: z.string().nullable(),
    disclosure_text: z.string().nullable(),
    evidence_url: z.url().nullable(),
    keyword: z
      .string()
      .nullable()
      .describe(
        'For a texted record: the keyword it was read as (`STOP`, `START`...), the rule that read a sentence, or `AI`.',
      ),
    message: z
      .object({ id: uuid(), body: z.string(), received_at: timestamp() })
      .meta({ id: 'ConsentMessage', description: 'A message the lead texted.' })
      .nullable()
      .describe('For a texted record: the message that revoked or granted consent, as the lead sent it.'),
  })
  .meta({ id: 'ConsentRecord' });

export const consentTrailResponse = z
  .object({
    phone: e164(),
    status: consentStatus,
    consent_required: z
      .boolean()
      .describe("The account's setting: without `granted`, its sequence steps to this lead wait."),
    opted_out: z
      .boolean()
      .describe('The number texted STOP and not START since: nothing but compliance replies is sent to it.'),
    records: z
      .array(consentRecordResponse)
      .max(PAGE_MAX)
      .describe('In the order they happened (`captured_at`, then as recorded).'),
    ...pageFields,
  })
  .meta({ id: 'ConsentTrail' });

export const consentGrantResponse = z
  .object({
    success: z.literal(true),
    recorded: z
      .boolean()
      .describe('False when the number already had this very grant: nothing new was recorded.'),
    status: consentStatus,
    record: consentRecordResponse.describe(
      'The grant: the one recorded now, or the identical one it repeats.',
    ),
  })
  .meta({ id: 'ConsentGrantResult' });

export const consentTrailQuery = paginationQuery;

export const exportFormats = ['ndjson', 'csv'] as const;

export const consentExportQuery = z
  .object({
    from: instant()
      .optional()
      .describe('Records recorded at or after this instant; the beginning when omitted.'),
    to: instant()
      .optional()
      .describe('Records recorded before this instant; the time of the request when omitted.'),
    format: z
      .enum(exportFormats)
      .default('ndjson')
      .describe(
        '`ndjson` (`application/x-ndjson`, one record a line) or `csv` (`text/csv`, with a header row).',
      ),
  })
  .refine(
    (query) =>
      query.from === undefined || query.to === undefined || new Date(query.from) < new Date(query.to),
    { message: '`to` must be after `from`.', path: ['to'] },
  );
