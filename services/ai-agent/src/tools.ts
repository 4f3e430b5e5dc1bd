import type { ChecklistEntry } from '@leadline/domain';
import { z } from 'zod';
import type { Attachment, CollectedItem, TurnInput } from './turn';
import { validateValue } from './validate';

/**
 * The tools of the contract (README), bound to one turn: they see only this conversation's checklist
 * and this burst's attachments, and they only propose; nothing is written until the decider records
 * the turn under the account's lock. Their results go back to the model as text. Each tool's
 * arguments have one zod schema: the model is offered its JSON Schema, and what the model sends is
 * parsed with it (keys the schema does not name are dropped, as the JSON Schema forbids them anyway).
 */
export const tools = {
  record_checklist_value: {
    description:
      'Record a text, email, phone, number or date checklist item the lead gave. Validated for the item type; an error means nothing was recorded.',
    parameters: z.object({
      requirement: z.string().meta({ description: 'The checklist item name, exactly as listed.' }),
      value: z.string().meta({ description: 'Dates as YYYY-MM-DD, numbers as digits.' }),
    }),
  },
  record_checklist_document: {
    description: "Match an attachment of the lead's latest messages (numbered from 1) to a document item.",
    parameters: z.object({
      requirement: z.string().meta({ description: 'The document item name, exactly as listed.' }),
      attachment: z.int().min(1).meta({ description: 'The attachment number, from 1.' }),
    }),
  },
  request_handoff: {
    description: 'Flag the conversation for a human.',
    parameters: z.object({ reason: z.string() }),
  },
  update_summary: {
    description: 'Replace the running summary of this conversation (a few sentences for the team).',
    parameters: z.object({ summary: z.string() }),
  },
  record_opt_out: {
    description:
      'The lead asks, in any words or language, not to be texted or contacted any more (a revocation of consent). Records the opt-out; the confirmation is sent for you, so write no reply.',
    parameters: z.object({
      reason: z.string().meta({ description: "Why the lead's message is a revocation, quoting its words." }),
    }),
  },
} as const;

export type ToolName = keyof typeof tools;
type ToolArguments<N extends ToolName> = z.infer<(typeof tools)[N]['parameters']>;

/** The JSON Schema of a tool's arguments, as the model is given it (`$schema` names only the draft). */
export function toolParameters(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _draft, ...parameters } = z.toJSONSchema(schema);
  return parameters;
}

export const toolDefinitions = Object.entries(tools).map(([name, tool]) => ({
  type: 'function' as const,
  function: { name, description: tool.description, parameters: toolParameters(tool.parameters) },
}));

/**
 * The tools offered for a turn. `record_opt_out` only answers the lead's messages: a sequence step has
 * no message of the lead's to revoke consent by.
 */
export const toolDefinitionsFor = (input: Pick<TurnInput, 'burst'>) =>
  input.burst.length > 0
    ? toolDefinitions
    : toolDefinitions.filter((tool) => tool.function.name !== 'record_opt_out');

const isToolName = (name: string): name is ToolName => Object.hasOwn(tools, name);

/** Where the arguments are wrong, for the model to read and call again. */
const describeIssues = (error: z.ZodError) =>
  error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'arguments'}: ${issue.message}`)
    .join('; ');

export interface Toolbox {
  execute(name: string, rawArguments: string): string;
  collected(): CollectedItem[];
  handoff(): string | null;
  /** The model's reason when it recorded an opt-out; null otherwise. */
  optOut(): string | null;
  summary(): string | null;
}

const findItem = (checklist: readonly ChecklistEntry[], name: string) =>
  checklist.find((item) => item.name.trim().toLowerCase() === name.trim().toLowerCase());

export function createToolbox(input: Pick<TurnInput, 'checklist' | 'attachments' | 'burst'>): Toolbox {
  const collected = new Map<string, CollectedItem>();
  let handoff: string | null = null;
  let optOut: string | null = null;
  let summary: string | null = null;
  const error = (message: string) => `ERROR: ${message} Nothing was recorded.`;

  const handlers: { [N in ToolName]: (args: ToolArguments<N>) => string } = {
    record_checklist_value(args) {
      const item = findItem(input.checklist, args.requirement);
      if (!item) return error(`There is no checklist item named ${JSON.stringify(args.requirement)}.`);
      if (item.type === 'document')
        return error(`${item.name} is a document: use record_checklist_document.`);
      const result = validateValue(item.type, args.value);
      if (!result.ok) return error(result.error);
      collected.set(item.requirement_id, {
        requirement_id: item.requirement_id,
        value: result.value,
        attachment: null,
      });
      return `Recorded ${item.name}: ${result.value}`;
    },
    record_checklist_document(args) {
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
    },
    request_handoff(args) {
      handoff = args.reason.trim().slice(0, 500) || 'requested_by_ai';
      return 'A person from the team will take over this conversation.';
    },
    update_summary(args) {
      summary = args.summary.trim().slice(0, 1000);
      return 'Summary updated.';
    },
    record_opt_out(args) {
      if (input.burst.length === 0) return error("There is no message of the lead's to opt out by.");
      optOut = args.reason.trim().slice(0, 500) || 'requested_by_lead';
      return 'The lead is opted out; the confirmation is sent for you. Write no reply.';
    },
  };

  function run<N extends ToolName>(name: N, json: unknown): string {
    const parsed = tools[name].parameters.safeParse(json);
    if (parsed.success) return handlers[name](parsed.data as ToolArguments<N>);
    // A lead who asked for a person reaches one, and one who asked to be left alone is, whatever the
    // model made of the reason.
    if (name === 'request_handoff') return handlers.request_handoff({ reason: '' });
    if (name === 'record_opt_out') return handlers.record_opt_out({ reason: '' });
    return error(`The arguments are not valid: ${describeIssues(parsed.error)}.`);
  }

  function execute(name: string, rawArguments: string): string {
    if (!isToolName(name)) return error(`Unknown tool ${name}.`);
    let json: unknown;
    try {
      json = JSON.parse(rawArguments);
    } catch {
      return error('The arguments are not valid JSON.');
    }
    return run(name, json);
  }

  return {
    execute,
    collected: () => [...collected.values()],
    handoff: () => handoff,
    optOut: () => optOut,
    summary: () => summary,
  };
}
