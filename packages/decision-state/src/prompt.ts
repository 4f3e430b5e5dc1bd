import type { PromptInput } from '@leadline/domain';
import type { Database } from '@leadline/runtime';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';

/** The lead's fields a prompt names: text only, so they survive JSON as they are. */
const promptLeadColumns = [
  'id',
  'phone',
  'name',
  'first_name',
  'last_name',
  'email',
  'company',
  'property_address',
] as const;

export type PromptLead = Pick<Selectable<Database['leads']>, (typeof promptLeadColumns)[number]>;

/**
 * Everything a prompt is composed from, each a JSON value of one select (Kysely's jsonArrayFrom and
 * jsonObjectFrom): the settings, the checklist with what the lead collected, the files and pages, and
 * the lead with `phone` (none without one). Text, booleans and null survive JSON as they are; no
 * timestamp is read. A caller adds its own reads to the same statement (the AI agent, the history), so
 * a turn pays one round trip for all of them: the round trips cost more than the reads.
 */
export function promptInputSelections(
  eb: ExpressionBuilder<Database, never>,
  accountId: string,
  phone: string | undefined,
) {
  // The lead with `phone`; no lead at all without one.
  const lead = eb
    .selectFrom('leads')
    .where('account_id', '=', accountId)
    .where((row) => (phone === undefined ? row.lit(false) : row('phone', '=', phone)));
  return [
    jsonObjectFrom(
      eb
        .selectFrom('ai_prompt_settings')
        .select([
          'mode',
          'role_persona',
          'tone_voice',
          'response_style',
          'conversation_rules',
          'special_instructions',
          'system_prompt',
        ])
        .where('account_id', '=', accountId),
    ).as('settings'),
    jsonArrayFrom(
      eb
        .selectFrom('requirements')
        .select(['id', 'name', 'type', 'description', 'required'])
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .orderBy('id'),
    ).as('requirements'),
    jsonArrayFrom(
      eb
        .selectFrom('lead_checklist_items')
        .select(['requirement_id', 'value', 'document_id'])
        .where('lead_id', 'in', lead.select('id')),
    ).as('collected'),
    jsonArrayFrom(
      eb
        .selectFrom('context_files')
        .select(['name', 'content'])
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .orderBy('id'),
    ).as('files'),
    jsonArrayFrom(
      eb
        .selectFrom('context_urls')
        .select(['url', 'title', 'content'])
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .orderBy('id'),
    ).as('pages'),
    jsonObjectFrom(lead.select(promptLeadColumns)).as('lead'),
  ] as const;
}

type PromptReads = {
  settings: PromptInput['settings'] | null;
  requirements: (Pick<PromptInput['checklist'][number], 'name' | 'type' | 'description' | 'required'> & {
    id: string;
  })[];
  collected: { requirement_id: string; value: string | null; document_id: string | null }[];
  files: PromptInput['files'][number][];
  pages: PromptInput['pages'][number][];
  lead: PromptLead | null;
};

/** The prompt's input from what `promptInputSelections` read, and the lead it names (if any). */
export function toPromptInput(
  account: { company_name: string },
  { settings, requirements, collected, files, pages, lead }: PromptReads,
): { input: PromptInput; lead: PromptLead | undefined } {
  const byRequirement = new Map(collected.map((item) => [item.requirement_id, item]));
  const input: PromptInput = {
    settings: settings ?? undefined,
    company: account.company_name,
    checklist: requirements.map((requirement) => {
      const item = byRequirement.get(requirement.id);
      return {
        requirement_id: requirement.id,
        name: requirement.name,
        type: requirement.type,
        description: requirement.description,
        required: requirement.required,
        collected: item ? (item.document_id ? 'document received' : (item.value ?? '')) : null,
      };
    }),
    files,
    pages,
    lead: lead
      ? {
          name: lead.name,
          first_name: lead.first_name,
          last_name: lead.last_name,
          phone: lead.phone,
          email: lead.email,
          company: lead.company,
          property_address: lead.property_address,
        }
      : {},
  };
  return { input, lead: lead ?? undefined };
}
