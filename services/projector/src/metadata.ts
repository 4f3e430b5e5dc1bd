import { sql } from 'kysely';

/**
 * The SQL that merges a metadata patch into a `metadata` jsonb column: keys with a value are set, keys
 * whose value is null are removed (the API's merge semantics). Typed as the column is written: JSON text.
 */
export function mergedMetadata(patch: Record<string, unknown>) {
  const entries = Object.entries(patch);
  const set = Object.fromEntries(entries.filter(([, value]) => value !== null));
  const removed = entries.filter(([, value]) => value === null).map(([key]) => key);
  return sql<string>`(metadata || ${JSON.stringify(set)}::jsonb) - ${removed}::text[]`;
}
