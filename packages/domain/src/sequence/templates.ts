import { leadName } from '@leadline/events';

/** The variables a fixed step's message may use (spec §2), each `{{name}}` or `{{name|fallback}}`. */
export const templateVariables = [
  'first_name',
  'last_name',
  'name',
  'company',
  'email',
  'property_address',
] as const;
export type TemplateVariable = (typeof templateVariables)[number];

const placeholder = /\{\{\s*([^}|]*?)\s*(?:\|([^}]*))?\}\}/g;

/**
 * What a variable renders as when the lead has no value and the template gives no fallback: a greeting
 * stays a greeting ("Hi there,"), never "Hi ,". Variables without a natural stand-in render as nothing,
 * and the text around them is tidied.
 */
export const defaultFallbacks: Record<TemplateVariable, string> = {
  first_name: 'there',
  name: 'there',
  last_name: '',
  company: '',
  email: '',
  property_address: 'your property',
};

/** The unknown variable names a template uses (empty when it is valid). */
export function unknownVariables(template: string): string[] {
  return [...template.matchAll(placeholder)]
    .map((match) => match[1]!)
    .filter((name) => !(templateVariables as readonly string[]).includes(name));
}

export interface TemplateValues {
  first_name: string | null;
  last_name: string | null;
  name: string | null;
  email: string | null;
  property_address: string | null;
  /** The account's company name. */
  company: string;
}

/** The values a lead offers: a missing first or full name is derived from the other. */
export function valuesOf(
  lead: { name: string | null; first_name: string | null; last_name: string | null } & Pick<
    TemplateValues,
    'email' | 'property_address'
  >,
  company: string,
): TemplateValues {
  const clean = (value: string | null) => value?.trim() || null;
  const first = clean(lead.first_name) ?? clean(lead.name)?.split(/\s+/)[0] ?? null;
  const full = leadName(lead);
  return {
    first_name: first,
    last_name: clean(lead.last_name),
    name: full,
    email: clean(lead.email),
    property_address: clean(lead.property_address),
    company: company.trim(),
  };
}

/**
 * Renders a fixed step: each variable is the lead's value, else the template's fallback
 * (`{{first_name|friend}}`), else the default fallback. Where something rendered as nothing, the
 * spaces it leaves are collapsed and no space is left before punctuation.
 */
export function renderTemplate(template: string, values: TemplateValues): string {
  let emptied = false;
  const rendered = template.replace(placeholder, (_match, name: string, fallback: string | undefined) => {
    const value =
      values[name as TemplateVariable] ||
      fallback?.trim() ||
      defaultFallbacks[name as TemplateVariable] ||
      '';
    if (value === '') emptied = true;
    return value;
  });
  if (!emptied) return rendered;
  return rendered
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/[ \t]+([,.!?;:])/g, '$1')
    .replace(/^[ \t]+|[ \t]+$/gm, '');
}
