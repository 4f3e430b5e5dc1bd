import type { PromptInput } from '@leadline/domain';
import type { Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';

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
  const [settings, requirements, collected, files, pages] = await Promise.all([
    db.selectFrom('ai_prompt_settings').selectAll().where('account_id', '=', account.id).executeTakeFirst(),
    db
      .selectFrom('requirements')
      .select(['id', 'name', 'type', 'description', 'required'])
      .where('account_id', '=', account.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    lead
      ? db
          .selectFrom('lead_checklist_items')
          .select(['requirement_id', 'value', 'document_id'])
          .where('lead_id', '=', lead.id)
          .execute()
      : Promise.resolve([]),
    db
      .selectFrom('context_files')
      .select(['name', 'content'])
      .where('account_id', '=', account.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    db
      .selectFrom('context_urls')
      .select(['url', 'title', 'content'])
      .where('account_id', '=', account.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
  ]);
  const byRequirement = new Map(collected.map((item) => [item.requirement_id, item]));
  return {
    settings,
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
