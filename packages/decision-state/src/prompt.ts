import type { PromptInput } from '@leadline/domain';
import type { Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';

/** Everything the prompt is composed from, read from the read models. */
export async function loadPromptInput(
  db: Kysely<Database>,
  account: { id: string; company_name: string },
  lead:
    | {
        id: string;
        phone: string;
        name: string | null;
        first_name: string | null;
        last_name: string | null;
        email: string | null;
        company: string | null;
        property_address: string | null;
      }
    | undefined,
): Promise<PromptInput> {
  // One statement for the five reads (each a JSON value of the row): a turn of the AI agent reads them
  // all, and a round trip each cost more than the reads. Text, booleans and null survive JSON as they
  // are; no timestamp is read.
  const { settings, requirements, collected, files, pages } = await db
    .selectNoFrom((eb) => [
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
          .where('account_id', '=', account.id),
      ).as('settings'),
      jsonArrayFrom(
        eb
          .selectFrom('requirements')
          .select(['id', 'name', 'type', 'description', 'required'])
          .where('account_id', '=', account.id)
          .orderBy('created_at')
          .orderBy('id'),
      ).as('requirements'),
      jsonArrayFrom(
        eb
          .selectFrom('lead_checklist_items')
          .select(['requirement_id', 'value', 'document_id'])
          .where((row) => (lead ? row('lead_id', '=', lead.id) : row.lit(false))),
      ).as('collected'),
      jsonArrayFrom(
        eb
          .selectFrom('context_files')
          .select(['name', 'content'])
          .where('account_id', '=', account.id)
          .orderBy('created_at')
          .orderBy('id'),
      ).as('files'),
      jsonArrayFrom(
        eb
          .selectFrom('context_urls')
          .select(['url', 'title', 'content'])
          .where('account_id', '=', account.id)
          .orderBy('created_at')
          .orderBy('id'),
      ).as('pages'),
    ])
    .executeTakeFirstOrThrow();
  const byRequirement = new Map(collected.map((item) => [item.requirement_id, item]));
  return {
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
}
