import type { EventData } from '@leadline/events';

/** The partner-supplied text fields of a lead (besides its phone). */
export const leadFieldNames = [
  'name',
  'first_name',
  'last_name',
  'email',
  'company',
  'notes',
  'source',
  'external_id',
  'property_address',
] as const;
export type LeadFieldName = (typeof leadFieldNames)[number];
export type LeadFields = Record<LeadFieldName, string | null>;
export type Metadata = Record<string, unknown>;
export type LeadStatus = EventData<'lead.created'>['status'];

/** A lead as decisions see it. */
export interface Lead extends LeadFields {
  lead_id: string;
  phone: string;
  status: LeadStatus;
  auto_sequence: boolean;
  metadata: Metadata;
  created_at: string;
}
