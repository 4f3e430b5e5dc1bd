import { z } from 'zod';
import { defineEvent } from '../define';
import { metadataSchema } from './shared';

export const leadStatuses = ['new', 'contacted', 'qualified', 'converted', 'lost'] as const;
export const leadStatusSchema = z.enum(leadStatuses);

/** The partner-supplied fields of a lead; null where not given. The phone is E.164. */
export const leadFieldsSchema = z.object({
  name: z.string().nullable(),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  email: z.string().nullable(),
  company: z.string().nullable(),
  notes: z.string().nullable(),
  source: z.string().nullable(),
  external_id: z.string().nullable(),
  property_address: z.string().nullable(),
  metadata: metadataSchema,
});

/** How a lead came to exist: imported through the API (one or bulk), or by texting the account's number. */
export const leadOrigins = ['api', 'bulk', 'inbound_message'] as const;

export const leadCreated = defineEvent('lead.created', {
  topic: 'account',
  data: leadFieldsSchema.extend({
    lead_id: z.string(),
    phone: z.string(),
    status: leadStatusSchema,
    auto_sequence: z.boolean(),
    origin: z.enum(leadOrigins),
  }),
});

/**
 * Fields that changed: filled in by a deduplicated import (only empty fields are filled) or set by a
 * PATCH. `metadata` holds keys to merge; a null value removes the key.
 */
export const leadUpdated = defineEvent('lead.updated', {
  topic: 'account',
  data: z.object({
    lead_id: z.string(),
    phone: z.string(),
    changes: leadFieldsSchema.partial().extend({ auto_sequence: z.boolean().optional() }),
  }),
});

export const leadStatusChanged = defineEvent('lead.status_changed', {
  topic: 'account',
  data: z.object({
    lead_id: z.string(),
    phone: z.string(),
    previous_status: leadStatusSchema,
    new_status: leadStatusSchema,
  }),
});

/** The lead, its checklist progress and its enrollment are removed; its conversation is kept. */
export const leadDeleted = defineEvent('lead.deleted', {
  topic: 'account',
  data: z.object({ lead_id: z.string(), phone: z.string() }),
});

/**
 * A partner erased the person behind `phone` in the account (a privacy request): the subject's key is
 * destroyed, so everything sealed under it on the log reads as erased, and every read model and
 * operational table forgets the lead, its conversation and its documents. `subject` is the keyed hash
 * naming the person (see the runtime's personal-data keys): it lets a consumer find rows it keeps under
 * the phone in clear, or under the erased marker after a rebuild, without the phone being readable.
 */
export const leadErased = defineEvent('lead.erased', {
  topic: 'account',
  data: z.object({
    /** Null when the phone had no lead any more (deleted, its conversation kept). */
    lead_id: z.string().nullable(),
    phone: z.string(),
    subject: z.string(),
  }),
});
