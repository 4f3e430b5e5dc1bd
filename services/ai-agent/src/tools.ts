import type { ChecklistEntry } from '@leadline/domain';
import type { Attachment, CollectedItem, TurnInput } from './turn';
import { validateValue } from './validate';

/**
 * The three tools of the contract (README), bound to one turn: they see only this conversation's
 * checklist and this burst's attachments, and they only propose; nothing is written until the
 * decider records the turn under the account's lock. Their results go back to the model as text.
 */
export const toolDefinitions = [
  {
    type: 'function' as const,
    function: {
      name: 'record_checklist_value',
      description:
        'Record a text, email, phone, number or date checklist item the lead gave. Validated for the item type; an error means nothing was recorded.',
      parameters: {
        type: 'object',
        properties: {
          requirement: { type: 'string', description: 'The checklist item name, exactly as listed.' },
          value: { type: 'string', description: 'Dates as YYYY-MM-DD, numbers as digits.' },
        },
        required: ['requirement', 'value'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'record_checklist_document',
      description: "Match an attachment of the lead's latest messages (numbered from 1) to a document item.",
      parameters: {
        type: 'object',
        properties: {
          requirement: { type: 'string', description: 'The document item name, exactly as listed.' },
          attachment: { type: 'integer', description: 'The attachment number, from 1.' },
        },
        required: ['requirement', 'attachment'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'request_handoff',
      description: 'Flag the conversation for a human.',
      parameters: {
        type: 'object',
        properties: { reason: { type: 'string' } },
        required: ['reason'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'update_summary',
      description: 'Replace the running summary of this conversation (a few sentences for the team).',
      parameters: {
        type: 'object',
        properties: { summary: { type: 'string' } },
        required: ['summary'],
        additionalProperties: false,
      },
    },
  },
];

export interface Toolbox {
  execute(name: string, rawArguments: string): string;
  collected(): CollectedItem[];
  handoff(): string | null;
  summary(): string | null;
}

const findItem = (checklist: readonly ChecklistEntry[], name: unknown) =>
  typeof name === 'string'
    ? checklist.find((item) => item.name.trim().toLowerCase() === name.trim().toLowerCase())
    : undefined;

export function createToolbox(input: Pick<TurnInput, 'checklist' | 'attachments'>): Toolbox {
  const collected = new Map<string, CollectedItem>();
  let handoff: string | null = null;
  let summary: string | null = null;
  const error = (message: string) => `ERROR: ${message} Nothing was recorded.`;

  function execute(name: string, rawArguments: string): string {
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(rawArguments) as Record<string, unknown>;
    } catch {
      return error('The arguments are not valid JSON.');
    }
    switch (name) {
      case 'record_checklist_value': {
        const item = findItem(input.checklist, args.requirement);
        if (!item) return error(`There is no checklist item named ${JSON.stringify(args.requirement)}.`);
        if (item.type === 'document')
          return error(`${item.name} is a document: use record_checklist_document.`);
        if (typeof args.value !== 'string') return error('The value must be a string.');
        const result = validateValue(item.type, args.value);
        if (!result.ok) return error(result.error);
        collected.set(item.requirement_id, {
          requirement_id: item.requirement_id,
          value: result.value,
          attachment: null,
        });
        return `Recorded ${item.name}: ${result.value}`;
      }
      case 'record_checklist_document': {
        const item = findItem(input.checklist, args.requirement);
        if (!item) return error(`There is no checklist item named ${JSON.stringify(args.requirement)}.`);
        if (item.type !== 'document') return error(`${item.name} is not a document item.`);
        const attachment: Attachment | undefined = input.attachments.find(
          (entry) => entry.number === args.attachment,
        );
        if (!attachment) {
          return error(
            input.attachments.length === 0
              ? 'The lead sent no attachment in these messages.'
              : `Attachments are numbered 1 to ${input.attachments.length}.`,
          );
        }
        collected.set(item.requirement_id, { requirement_id: item.requirement_id, value: null, attachment });
        return `Recorded attachment ${attachment.number} as ${item.name}.`;
      }
      case 'request_handoff':
        handoff =
          typeof args.reason === 'string' && args.reason.trim()
            ? args.reason.trim().slice(0, 500)
            : 'requested_by_ai';
        return 'A person from the team will take over this conversation.';
      case 'update_summary':
        if (typeof args.summary !== 'string') return error('The summary must be a string.');
        summary = args.summary.trim().slice(0, 1000);
        return 'Summary updated.';
      default:
        return error(`Unknown tool ${name}.`);
    }
  }

  return {
    execute,
    collected: () => [...collected.values()],
    handoff: () => handoff,
    summary: () => summary,
  };
}
