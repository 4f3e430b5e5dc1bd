import { teamMemberRoles } from '@leadline/events';
import { z } from 'zod';
import { count, e164, httpUrl, idParam, PAGE_MAX, timestamp, uuid } from '../http/fields';
import { pageFields, paginationQuery } from '../http/pagination';
import { phoneNumberSchema } from '../http/phone';

const hexColor = z
  .string()
  .max(7)
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'Must be a hex colour such as #1A73E8.')
  .meta({ example: '#1A73E8' });

const METADATA_MAX_BYTES = 16 * 1024;
const METADATA_MAX_DEPTH = 32;

/** Levels of nesting, counted without recursion, stopping once past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0 && deepest <= limit) {
    const [current, depth] = stack.pop()!;
    deepest = Math.max(deepest, depth);
    if (current !== null && typeof current === 'object')
      for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}

export const metadataInput = z
  .record(z.string().min(1).max(64), z.unknown())
  // Checked first and aborting: measuring the size of a deeper document would overflow the stack.
  .refine((value) => depthOf(value, METADATA_MAX_DEPTH) <= METADATA_MAX_DEPTH, {
    message: `At most ${METADATA_MAX_DEPTH} levels of nesting.`,
    abort: true,
  })
  .refine((value) => Object.keys(value).length <= 50, 'At most 50 keys.')
  .refine((value) => JSON.stringify(value).length <= METADATA_MAX_BYTES, 'At most 16 KB of JSON.')
  .meta({
    description: 'Arbitrary key-value pairs for your own tracking (at most 50 keys, 16 KB, 32 levels deep).',
  });

const name = z.string().trim().min(1, 'Must not be empty.').max(200);

export const accountParams = z.object({ id: idParam('The account id.') });

const aiPauseMinutes = z
  .number()
  .int()
  .min(1)
  .max(525_600)
  .describe('Minutes a manual message pauses the AI in its conversation (until resume-ai at the latest).');

const clockTime = z
  .string()
  .max(5)
  .regex(/^(?:[01]\d|2[0-3]):[0-5]\d$/, 'Must be a time such as 08:00.');
/**
 * Zones already checked. Building an Intl.DateTimeFormat costs tens of microseconds, and the response
 * schema checks every account's zone on every answer (it was an eighth of a GET's CPU): the few zones in
 * use are checked once. Bounded, so a client sending junk zones cannot grow it.
 */
const checkedTimeZones = new Map<string, boolean>();
function isTimeZone(zone: string): boolean {
  const known = checkedTimeZones.get(zone);
  if (known !== undefined) return known;
  let valid: boolean;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    valid = zone.includes('/') || zone === 'UTC';
  } catch {
    valid = false;
  }
  if (checkedTimeZones.size >= 1000) checkedTimeZones.clear();
  checkedTimeZones.set(zone, valid);
  return valid;
}
const timeZone = z.string().max(64).refine(isTimeZone, 'Must be an IANA time zone such as America/New_York.');

const sendingWindowFields = {
  enabled: z.boolean().describe('False turns quiet hours off for the account (see the README: legal risk).'),
  start: clockTime.describe('Local to the lead, `HH:MM`.'),
  end: clockTime.describe('Local to the lead, `HH:MM`; after `start`.'),
  time_zone: timeZone.describe("Used when the lead's area code says nothing of its zone."),
};
const windowOrder = (window: { start?: string | undefined; end?: string | undefined }) =>
  window.start === undefined || window.end === undefined || window.start < window.end;

export const sendingWindowInput = z
  .strictObject(
    Object.fromEntries(
      Object.entries(sendingWindowFields).map(([key, schema]) => [key, schema.optional()]),
    ) as { [K in keyof typeof sendingWindowFields]: z.ZodOptional<(typeof sendingWindowFields)[K]> },
  )
  .refine(windowOrder, { message: '`end` must be after `start`.', path: ['end'] })
  .meta({
    id: 'SendingWindowUpdate',
    description:
      'When sequence steps may go out, local to the lead (time zone from the area code). Only the given ' +
      'fields change. Default `{enabled: true, start: "08:00", end: "21:00", time_zone: "America/New_York"}`; ' +
      'a window wider than a stricter state allows (Florida, Oklahoma: 08:00-20:00) is narrowed there.',
  });

const consentRequired = z
  .boolean()
  .describe(
    "Sequence steps (AI-written ones too) go only to leads whose consent is recorded (`GET …/leads/{phone}/consent`); others' steps wait (`hold_reason: no_consent`) until it is. Replies to a lead who wrote first and manual messages are not held. Accounts created before consent was recorded have `false`.",
  );

const retentionDays = z
  .number()
  .int()
  .min(1)
  .max(3650)
  .nullable()
  .meta({ format: 'int32' })
  .describe(
    "How many days the conversation's content is kept, or null (the default): kept for good. Expiry runs on " +
      'UTC days, at least hourly: once a UTC day is more than `retention_days` days before today (UTC), what ' +
      'it held expires: message bodies and media links (the message reads `body: ""`, `media: []`, ' +
      '`content_expired: true`), conversation previews and AI summaries, collected checklist values and ' +
      'documents (their files and extracted text). What stays: that each message existed, its times, ' +
      'direction and status; which checklist items were collected, and when; the lead itself. Expired content ' +
      'cannot be recovered: its encryption keys are destroyed, in every copy of the event log too. An ' +
      '`account.content_expired` event records each expiry.',
  );

/**
 * A little above the most any 10DLC campaign is granted (AT&T's top message class: 4,500 a minute, 75 a
 * second), so a partner can set what its campaign got, and a typo cannot turn pacing off.
 */
const SENDING_RATE_MAX = 100;
const messagesPerSecond = z
  .number()
  .positive()
  .max(SENDING_RATE_MAX)
  .nullable()
  .meta({ format: 'double', example: 1 })
  .describe(
    `Messages a second the account's number may send (above 0, at most ${SENDING_RATE_MAX}; fractions allowed, ` +
      '0.5 is one every two seconds), or null for the deployment default (1 a second unless the operator ' +
      'set another). A US long code that is not on an approved 10DLC campaign is safe at 1 a second; once the ' +
      "account's campaign is approved, set what the carriers granted it. Messages beyond it wait in the " +
      "queue, in order, rather than in the carrier's.",
  );
/** Far above any carrier's daily cap for a brand (T-Mobile's highest tiers are in the hundreds of thousands). */
const DAILY_CAP_MAX = 10_000_000;
const dailyCap = z
  .number()
  .int()
  .min(1)
  .max(DAILY_CAP_MAX)
  .nullable()
  .meta({ format: 'int32', example: 2000 })
  .describe(
    `Messages a day the account's brand may send (1 to ${DAILY_CAP_MAX}; the carriers' day, from midnight ` +
      'Pacific time), or null for the deployment default (no cap unless the operator set one). Past it, messages are held until the ' +
      'next day (`hold_reason: brand_daily_cap`); opt-out confirmations and HELP answers still go.',
  );

export const sendingRateResponse = z
  .object({ messages_per_second: messagesPerSecond, daily_cap: dailyCap })
  .meta({
    id: 'SendingRate',
    description:
      "The account's own sending rate: each field is the account's setting, null meaning the deployment's " +
      'default applies (not the default itself).',
  });

export const sendingRateInput = z
  .strictObject({ messages_per_second: messagesPerSecond.optional(), daily_cap: dailyCap.optional() })
  .meta({
    id: 'SendingRateUpdate',
    description: "Only the given fields change; null resets one to the deployment's default.",
  });

export const sendingWindowResponse = z.object(sendingWindowFields).meta({ id: 'SendingWindow' });

export const createAccountBody = z
  .strictObject({
    name,
    company_name: name.optional().describe('Used by the AI in conversations. Defaults to `name`.'),
    phone_number: phoneNumberSchema.optional().describe('Provisioned automatically when omitted.'),
    forwarding_number: phoneNumberSchema.optional(),
    branding: z
      .strictObject({ logo_url: httpUrl.optional(), accent_color: hexColor.optional() })
      .meta({ id: 'BrandingSettings', description: 'The logo and colour of the embedded dashboard.' })
      .optional(),
    metadata: metadataInput.optional(),
    ai_pause_minutes: aiPauseMinutes.default(1440),
    sending_window: sendingWindowInput.optional(),
    consent_required: consentRequired.default(true),
    retention_days: retentionDays.optional(),
    sending_rate: sendingRateInput.optional(),
  })
  .meta({ id: 'CreateAccountRequest' });

export const updateAccountBody = z
  .object({
    name: name.optional(),
    company_name: name.optional(),
    forwarding_number: phoneNumberSchema.nullable().optional().describe('null removes it.'),
    branding: z
      .strictObject({ logo_url: httpUrl.nullable().optional(), accent_color: hexColor.nullable().optional() })
      .meta({ id: 'BrandingUpdate', description: 'Only the given fields change; null removes one.' })
      .optional(),
    metadata: metadataInput
      .optional()
      .describe('Merged into the existing metadata; a key set to null is removed.'),
    ai_pause_minutes: aiPauseMinutes.optional(),
    sending_window: sendingWindowInput.optional(),
    consent_required: consentRequired
      .optional()
      .describe('`false` releases every step held for consent at once (inside the sending window).'),
    retention_days: retentionDays
      .optional()
      .describe('null keeps content for good from now on (what already expired stays expired).'),
    sending_rate: sendingRateInput.optional(),
    status: z.enum(['active', 'deactivated']).optional().describe('`active` reactivates an account.'),
  })
  .strict()
  .meta({
    id: 'UpdateAccountRequest',
    description:
      'Mutable fields: name, company_name, forwarding_number, branding, metadata, ai_pause_minutes, sending_window, consent_required, retention_days, sending_rate and status. ' +
      'The phone number and slug cannot change.',
  });

export const listAccountsQuery = paginationQuery.extend({
  status: z.enum(['active', 'deactivated']).optional(),
  search: z.string().trim().min(1).max(200).optional().describe('Case-insensitive match on the name.'),
});

export const inviteTeamMemberBody = z
  .strictObject({
    email: z.email().max(320),
    name: name.optional(),
    role: z.enum(teamMemberRoles).default('member'),
    phone_number: phoneNumberSchema.optional(),
    forwarding_number: phoneNumberSchema.optional(),
  })
  .meta({ id: 'InviteTeamMemberRequest' });

const stats = z
  .object({ total_leads: count(), total_conversations: count(), active_sequences: count() })
  .meta({ id: 'AccountStats' });

export const accountResponse = z
  .object({
    id: uuid(),
    name: z.string(),
    company_name: z.string(),
    slug: z.string(),
    status: z.enum(['active', 'deactivated']),
    phone_number: e164(),
    forwarding_number: e164().nullable(),
    branding: z
      .object({ logo_url: z.url().nullable(), accent_color: z.string().nullable() })
      .meta({ id: 'Branding' }),
    metadata: z.record(z.string(), z.unknown()),
    ai_pause_minutes: z.number().int().min(1).max(525_600).meta({ format: 'int32' }),
    sending_window: sendingWindowResponse,
    consent_required: consentRequired,
    retention_days: retentionDays,
    sending_rate: sendingRateResponse,
    created_at: timestamp(),
    deactivated_at: timestamp().nullable(),
    erased_at: timestamp()
      .nullable()
      .describe(
        'When the account was erased (`POST /accounts/{id}/erase`), or null. An erased account stays ' +
          'deactivated and takes no more writes but a repeated erasure and the release of its number: ' +
          'each other write answers 409 `account_erased`, and SMS to its number are not accepted.',
      ),
    stats,
  })
  .meta({ id: 'Account' });

export const accountListResponse = z
  .object({
    accounts: z
      .array(
        accountResponse
          .pick({ id: true, name: true, status: true, phone_number: true, stats: true, created_at: true })
          .meta({ id: 'AccountSummary' }),
      )
      .max(PAGE_MAX),
    ...pageFields,
  })
  .meta({ id: 'AccountList' });

export const deactivateResponse = z
  .object({ id: uuid(), status: z.literal('deactivated'), deactivated_at: timestamp() })
  .meta({ id: 'DeactivatedAccount' });

export const accountErasedResponse = z
  .object({
    id: uuid(),
    status: z.literal('deactivated'),
    erased_at: timestamp().describe(
      'When the account was erased: the first erasure, the same for a repeated request.',
    ),
    leads_erased: count().describe(
      'People erased with the account so far, each a phone it held: its leads, the numbers that only ' +
        'texted it, and numbers its log alone still knew.',
    ),
  })
  .meta({ id: 'AccountErased' });

export const releasedPhoneNumberResponse = z
  .object({
    id: uuid().describe('The account.'),
    phone_number: e164().describe('The number the account gave up.'),
    released_at: timestamp(),
  })
  .meta({ id: 'ReleasedPhoneNumber' });

export const teamMemberResponse = z
  .object({
    id: uuid(),
    account_id: uuid(),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(teamMemberRoles),
    phone_number: e164().nullable(),
    forwarding_number: e164().nullable(),
    status: z.literal('invited'),
    invited_at: timestamp(),
  })
  .meta({ id: 'TeamMember' });

export const teamListResponse = z
  .object({ team_members: z.array(teamMemberResponse).max(10_000) })
  .meta({ id: 'TeamMemberList' });
