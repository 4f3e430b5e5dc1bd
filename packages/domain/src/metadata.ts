type Metadata = Record<string, unknown>;

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The part of a metadata patch that changes anything: keys set to a different value, and keys set to
 * null (removal) that exist. Merge semantics shared by accounts and leads.
 */
export function metadataChanges(current: Metadata, patch: Metadata | undefined): Metadata {
  return Object.fromEntries(
    Object.entries(patch ?? {}).filter(([key, value]) =>
      value === null ? key in current : !sameJson(current[key], value),
    ),
  );
}
