import { z } from 'zod';
import { defineEvent } from '../define';
import { requirementTypeSchema } from './requirements';

/**
 * Checklist collection: what the AI (or its offline stand-in) collected for a lead. The progress
 * figures are those after the item was recorded, so consumers (the webhook relay, analytics) need no
 * read model to report them.
 */

/** A stored document (an MMS photo or PDF); its bytes live in the document store, never on the log. */
export const collectedDocumentSchema = z.object({
  document_id: z.string(),
  /** Sniffed from the bytes, not the declared type. */
  content_type: z.string(),
  file_size: z.number().int().nonnegative(),
});

const progressFields = {
  checklist_progress: z.number().min(0).max(1),
  completed_items: z.number().int().nonnegative(),
  total_items: z.number().int().nonnegative(),
};

export const checklistItemCollected = defineEvent('checklist.item_collected', {
  topic: 'account',
  data: z.object({
    lead_id: z.string(),
    phone: z.string(),
    lead_name: z.string().nullable(),
    requirement_id: z.string(),
    requirement_name: z.string(),
    requirement_type: requirementTypeSchema,
    /** The validated value (emails lowercased, phones E.164, dates YYYY-MM-DD); null for a document. */
    value: z.string().nullable(),
    document: collectedDocumentSchema.nullable(),
    /** The inbound message the value or document came from. */
    message_id: z.string().nullable(),
    ...progressFields,
  }),
});

/** Every required item is collected (emitted once, when the last one comes in). */
export const checklistCompleted = defineEvent('checklist.completed', {
  topic: 'account',
  data: z.object({
    lead_id: z.string(),
    phone: z.string(),
    lead_name: z.string().nullable(),
    ...progressFields,
  }),
});
