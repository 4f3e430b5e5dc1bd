import type { EventData, NewEvent } from '@leadline/events';
import type { Lead } from './state';

export type LeadChanges = EventData<'lead.updated'>['changes'];

/**
 * Two updates of one lead as one, in log order: later values win and metadata patches merge, a null
 * still removing its key. A bulk import folds its fills with it, and the projector folds a run of
 * updates into one statement with it.
 */
export function foldLeadChanges(earlier: LeadChanges | undefined, later: LeadChanges): LeadChanges {
  const metadata =
    earlier?.metadata || later.metadata ? { ...earlier?.metadata, ...later.metadata } : undefined;
  return { ...earlier, ...later, ...(metadata && { metadata }) };
}

/** A metadata patch applied: keys with a value are set, keys set to null are removed. */
export function mergeMetadata(
  metadata: Record<string, unknown>,
  patch: Record<string, unknown> | undefined,
): Record<string, unknown> {
  if (!patch) return metadata;
  const merged = { ...metadata, ...patch };
  for (const [key, value] of Object.entries(patch)) if (value === null) delete merged[key];
  return merged;
}

/**
 * The lead of a number after `event` at `at`, as the projector's `leads` read model will have it: created
 * once (a create for a number that has a lead changes nothing), updated, moved to another status, or
 * deleted. Events about another lead leave it as it is.
 */
export function evolveLead(lead: Lead | undefined, event: NewEvent, at: Date): Lead | undefined {
  switch (event.type) {
    case 'lead.created': {
      if (lead) return lead;
      const { origin: _origin, ...created } = event.data;
      return { ...created, created_at: at.toISOString() };
    }
    case 'lead.updated': {
      if (lead?.lead_id !== event.data.lead_id) return lead;
      const { metadata, ...fields } = event.data.changes;
      return { ...lead, ...fields, metadata: mergeMetadata(lead.metadata, metadata) };
    }
    case 'lead.status_changed':
      return lead?.lead_id === event.data.lead_id ? { ...lead, status: event.data.new_status } : lead;
    case 'lead.deleted':
      return lead?.lead_id === event.data.lead_id ? undefined : lead;
    default:
      return lead;
  }
}
