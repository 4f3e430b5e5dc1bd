import { z } from 'zod';
import { defineEvent } from '../define';
import { brandingSchema, metadataSchema } from './shared';

/**
 * When proactive messages (sequence steps) may go out: between `start` and `end` local to the lead
 * (from the number's area code, else `time_zone`). Absent on accounts created before it existed: the
 * default, 08:00-21:00 America/New_York, enabled.
 */
export const sendingWindowSchema = z.object({
  enabled: z.boolean(),
  start: z.string(),
  end: z.string(),
  time_zone: z.string(),
});

/**
 * What the account's number may carry, each null for the deployment's default (the gateway's
 * SMS_MESSAGES_PER_SECOND and SMS_BRAND_DAILY_CAP): messages a second from the number, and messages a
 * carriers' day from the brand. No personal data.
 */
export const sendingRateSchema = z.object({
  messages_per_second: z.number().positive().max(100).nullable(),
  daily_cap: z.number().int().min(1).nullable(),
});

export const accountCreated = defineEvent('account.created', {
  topic: 'account',
  data: z.object({
    name: z.string(),
    company_name: z.string(),
    slug: z.string(),
    phone_number: z.string(),
    /** Whether the number was provisioned for the account (true) or supplied by the partner. */
    phone_number_provisioned: z.boolean(),
    forwarding_number: z.string().nullable(),
    branding: brandingSchema,
    metadata: metadataSchema,
    /** Minutes the AI stays paused after a manual message; absent on accounts created before it existed (1440). */
    ai_pause_minutes: z.number().int().positive().optional(),
    sending_window: sendingWindowSchema.optional(),
    /**
     * Proactive messages (sequence steps, AI-written ones included) need the lead's recorded consent.
     * Absent on accounts created before it existed: false, as they behaved.
     */
    consent_required: z.boolean().optional(),
    /**
     * Days message bodies and documents are kept (UTC days), or null: kept for good. Absent on
     * accounts created before retention existed: null.
     */
    retention_days: z.number().int().min(1).max(3650).nullable().optional(),
    /** Absent (or null) on accounts created before it existed: the deployment's defaults. */
    sending_rate: sendingRateSchema.nullable().optional(),
  }),
});

/**
 * Only the fields that changed are present. `metadata` holds the keys to merge; a key whose value
 * is null is removed from the account's metadata.
 */
export const accountUpdated = defineEvent('account.updated', {
  topic: 'account',
  data: z.object({
    name: z.string().optional(),
    company_name: z.string().optional(),
    forwarding_number: z.string().nullable().optional(),
    branding: brandingSchema.partial().optional(),
    metadata: metadataSchema.optional(),
    ai_pause_minutes: z.number().int().positive().optional(),
    sending_window: sendingWindowSchema.optional(),
    consent_required: z.boolean().optional(),
    retention_days: z.number().int().min(1).max(3650).nullable().optional(),
    /** The fields that changed; a null one is back to the deployment's default. */
    sending_rate: sendingRateSchema.partial().nullable().optional(),
  }),
});

/**
 * The account's retention passed for what happened before `expired_before`: the keys that sealed
 * message bodies, media links, collected values and documents of those UTC days are destroyed, and
 * every consumer forgets its copies of them (what happened stays: times, directions, statuses, which
 * checklist items were collected). Carries no personal data.
 */
export const accountContentExpired = defineEvent('account.content_expired', {
  topic: 'account',
  data: z.object({ expired_before: z.iso.datetime() }),
});

export const accountDeactivated = defineEvent('account.deactivated', {
  topic: 'account',
  data: z.object({}),
});

export const accountReactivated = defineEvent('account.reactivated', {
  topic: 'account',
  data: z.object({}),
});

/**
 * The partner gave up a deactivated account's number: it no longer receives SMS on it, another
 * account may take it, and the account cannot be reactivated.
 */
export const accountPhoneNumberReleased = defineEvent('account.phone_number_released', {
  topic: 'account',
  data: z.object({ phone_number: z.string() }),
});

/**
 * A partner erased the account (a privacy request covering everyone it holds): every person it held
 * was erased by a `lead.erased` each, appended before this one, and every personal-data key of the
 * account (its leads' and its team members') destroyed with it. No personal data: the account's own
 * business data stays, and so do its usage counters. An erasure asked again (it erases whatever the
 * account gained since) appends another with the first one's `erased_at` and the total so far.
 */
export const accountErased = defineEvent('account.erased', {
  topic: 'account',
  data: z.object({
    erased_at: z.iso.datetime(),
    /** The people the account's erasures erased so far, each a phone it held (a `lead.erased` each). */
    leads_erased: z.number().int().nonnegative(),
  }),
});

export const teamMemberRoles = ['owner', 'admin', 'member'] as const;

export const teamMemberInvited = defineEvent('team_member.invited', {
  topic: 'account',
  data: z.object({
    member_id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(teamMemberRoles),
    phone_number: z.string().nullable(),
    forwarding_number: z.string().nullable(),
  }),
});
