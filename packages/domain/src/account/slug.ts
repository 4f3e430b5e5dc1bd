/** Lowercase name, every run of non-alphanumerics as one `-`; `account` when nothing is left. */
export function baseSlug(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return slug || 'account';
}

/** The base slug, or the first free `base-N` (N from 2) among the partner's slugs. */
export function uniqueSlug(name: string, taken: ReadonlySet<string>): string {
  const base = baseSlug(name);
  if (!taken.has(base)) return base;
  for (let suffix = 2; ; suffix++) {
    const candidate = `${base}-${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}
