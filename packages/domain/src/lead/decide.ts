import type { EventData, NewEvent } from '@leadline/events';
import { conflict } from '../errors';
import { metadataChanges } from '../metadata';
import { foldLeadChanges } from './evolve';
import {
  leadFieldNames,
  type Lead,
  type LeadFieldName,
  type LeadFields,
  type LeadStatus,
  type Metadata,
} from './state';

/** One validated, normalized lead of an import. */
export type LeadImport = Partial<Record<LeadFieldName, string>> & {
  phone: string;
  auto_sequence: boolean;
  metadata?: Metadata | undefined;
};

export type ImportAction = 'created' | 'updated' | 'skipped';

export interface ImportDecision {
  events: NewEvent[];
  /** Per import, in order: what happened and the lead as it stands after the import. */
  outcomes: { action: ImportAction; lead: Lead }[];
}

const isEmpty = (value: unknown) => value === null || value === undefined || value === '';

/**
 * Imports leads into an account, deduplicated by phone, then by external_id: a lead that exists keeps
 * its fields and only has its empty ones filled (`updated`), or is left alone when nothing was empty
 * (`skipped`). Later entries of the same import see the earlier ones, so a duplicate inside a bulk
 * import is updated or skipped too. Each lead gets one event, whatever the number of its entries.
 */
export function decideLeadImports(
  imports: readonly LeadImport[],
  existing: readonly Lead[],
  context: { newId: () => string; now: Date; origin: EventData<'lead.created'>['origin'] },
): ImportDecision {
  const byPhone = new Map<string, Lead>();
  const byExternalId = new Map<string, Lead>();
  const remember = (lead: Lead) => {
    byPhone.set(lead.phone, lead);
    if (lead.external_id) byExternalId.set(lead.external_id, lead);
  };
  existing.map((lead) => ({ ...lead, metadata: { ...lead.metadata } })).forEach(remember);

  const created = new Set<string>();
  const changes = new Map<string, EventData<'lead.updated'>['changes']>();
  const touched: Lead[] = [];
  const outcomes: ImportDecision['outcomes'] = [];

  for (const entry of imports) {
    const match =
      byPhone.get(entry.phone) ?? (entry.external_id ? byExternalId.get(entry.external_id) : undefined);
    if (!match) {
      const lead: Lead = {
        lead_id: context.newId(),
        phone: entry.phone,
        ...(Object.fromEntries(leadFieldNames.map((field) => [field, entry[field] ?? null])) as LeadFields),
        status: 'new',
        auto_sequence: entry.auto_sequence,
        metadata: entry.metadata ?? {},
        created_at: context.now.toISOString(),
      };
      remember(lead);
      created.add(lead.lead_id);
      touched.push(lead);
      outcomes.push({ action: 'created', lead });
      continue;
    }

    const fill: EventData<'lead.updated'>['changes'] = {};
    for (const field of leadFieldNames) {
      const value = entry[field];
      if (isEmpty(value) || !isEmpty(match[field])) continue;
      // An external id another lead already has is not copied: it identifies that other lead.
      if (field === 'external_id' && byExternalId.has(value!)) continue;
      fill[field] = value!;
    }
    const newMetadata = Object.entries(entry.metadata ?? {}).filter(([key]) => !(key in match.metadata));
    if (newMetadata.length > 0) fill.metadata = Object.fromEntries(newMetadata);

    if (Object.keys(fill).length === 0) {
      outcomes.push({ action: 'skipped', lead: match });
      continue;
    }
    Object.assign(match, { ...fill, metadata: { ...match.metadata, ...fill.metadata } });
    remember(match);
    if (!created.has(match.lead_id)) {
      const previous = changes.get(match.lead_id);
      if (!previous) touched.push(match);
      changes.set(match.lead_id, foldLeadChanges(previous, fill));
    }
    outcomes.push({ action: 'updated', lead: match });
  }

  const events = touched.map((lead): NewEvent => {
    if (created.has(lead.lead_id)) {
      const { lead_id, phone, status, auto_sequence, metadata } = lead;
      const fields = Object.fromEntries(leadFieldNames.map((field) => [field, lead[field]])) as LeadFields;
      return {
        type: 'lead.created',
        data: { lead_id, phone, status, auto_sequence, metadata, ...fields, origin: context.origin },
      };
    }
    return {
      type: 'lead.updated',
      data: { lead_id: lead.lead_id, phone: lead.phone, changes: changes.get(lead.lead_id)! },
    };
  });
  return { events, outcomes };
}

export type LeadCommand =
  | {
      type: 'UpdateLead';
      fields: Partial<Record<LeadFieldName, string | null>>;
      /** Merged into the lead's metadata; a null value removes the key. */
      metadata?: Metadata | undefined;
      auto_sequence?: boolean | undefined;
      status?: LeadStatus | undefined;
    }
  | { type: 'DeleteLead' };

export interface LeadState {
  lead: Lead;
  /** The lead that has the external id the command wants to set, if another lead has it. */
  externalIdOwner?: string | undefined;
}

/** The lead's decider: changes only what differs; a status change is its own event. */
export function decideLead(command: LeadCommand, { lead, externalIdOwner }: LeadState): NewEvent[] {
  switch (command.type) {
    case 'UpdateLead': {
      if (externalIdOwner && externalIdOwner !== lead.lead_id) {
        throw conflict('external_id_in_use', 'Another lead of this account has this external_id.');
      }
      const changed: EventData<'lead.updated'>['changes'] = {};
      for (const field of leadFieldNames) {
        const value = command.fields[field];
        if (value !== undefined && value !== lead[field]) changed[field] = value;
      }
      if (command.auto_sequence !== undefined && command.auto_sequence !== lead.auto_sequence) {
        changed.auto_sequence = command.auto_sequence;
      }
      const metadata = metadataChanges(lead.metadata, command.metadata);
      if (Object.keys(metadata).length > 0) changed.metadata = metadata;

      const events: NewEvent[] = [];
      if (Object.keys(changed).length > 0) {
        events.push({
          type: 'lead.updated',
          data: { lead_id: lead.lead_id, phone: lead.phone, changes: changed },
        });
      }
      if (command.status && command.status !== lead.status) {
        events.push({
          type: 'lead.status_changed',
          data: {
            lead_id: lead.lead_id,
            phone: lead.phone,
            previous_status: lead.status,
            new_status: command.status,
          },
        });
      }
      return events;
    }
    case 'DeleteLead':
      return [{ type: 'lead.deleted', data: { lead_id: lead.lead_id, phone: lead.phone } }];
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}
