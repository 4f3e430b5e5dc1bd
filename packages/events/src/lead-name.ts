/** The name fields of a lead. */
export interface LeadNameFields {
  name: string | null;
  first_name: string | null;
  last_name: string | null;
}

/**
 * `lead_name`, wherever an event or a webhook carries it: the lead's `name`, else its first and last
 * names joined, else null. One rule, so a lead known only by first and last name is named alike in
 * every event and webhook.
 */
export function leadName(fields: LeadNameFields | null | undefined): string | null {
  if (!fields) return null;
  if (fields.name?.trim()) return fields.name.trim();
  const joined = [fields.first_name, fields.last_name]
    .map((part) => part?.trim())
    .filter(Boolean)
    .join(' ');
  return joined || null;
}
