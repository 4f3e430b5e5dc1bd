/** The page size of a subject listing: Apicurio's ccompat API answers at most 1,000 subjects a call. */
const PAGE = 1000;

/**
 * Every subject the registry holds, page by page (`offset`/`limit`): a single `GET /subjects` stops at
 * the first 1,000, so a test file whose subjects sort later would never find, nor delete, its own. A
 * registry that ignores `offset` answers the same page again, which ends the walk.
 */
export async function allSubjects(fetchPage: (offset: number, limit: number) => Promise<string[]>) {
  const found = new Set<string>();
  for (let offset = 0; ; offset += PAGE) {
    const page = await fetchPage(offset, PAGE);
    const before = found.size;
    for (const subject of page) found.add(subject);
    if (page.length < PAGE || found.size === before) return [...found];
  }
}

/** Deletes every subject under `prefix`, soft then permanently, as the Confluent API wants. */
export async function deleteSubjectsUnder(registryUrl: string, prefix: string) {
  const subjects = await allSubjects(async (offset, limit) => {
    const response = await fetch(`${registryUrl}/subjects?offset=${offset}&limit=${limit}`);
    return (await response.json()) as string[];
  }).catch((): string[] => []);
  await Promise.all(
    subjects
      .filter((subject) => subject.startsWith(prefix))
      .map(async (subject) => {
        const url = `${registryUrl}/subjects/${encodeURIComponent(subject)}`;
        await fetch(url, { method: 'DELETE' }).catch(() => undefined);
        await fetch(`${url}?permanent=true`, { method: 'DELETE' }).catch(() => undefined);
      }),
  );
}
