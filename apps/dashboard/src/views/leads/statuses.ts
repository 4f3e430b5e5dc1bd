import type { Schemas } from '../../lib/api';

export type LeadStatus = Schemas['Lead']['status'];

/** Every status a lead can have, in the order a lead moves through them. */
export const leadStatuses: readonly LeadStatus[] = ['new', 'contacted', 'qualified', 'converted', 'lost'];
