import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDirectoryDocumentStore } from '../src/documents/store';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'leadline-documents-'));
});
afterAll(() => rm(directory, { recursive: true, force: true }));

describe('the directory document store', () => {
  it('destroys the bytes of the documents removed, and no others; removing again is no error', async () => {
    const store = createDirectoryDocumentStore(directory);
    await store.put('doc-erased', Buffer.from('W-2 of the erased lead'));
    await store.put('doc-kept', Buffer.from('W-2 of another lead'));

    await store.remove(['doc-erased']);
    await store.remove(['doc-erased', 'doc-never-stored']);

    expect(await store.get('doc-erased')).toBeUndefined();
    expect(await store.get('doc-kept')).toEqual(Buffer.from('W-2 of another lead'));
    expect(await readdir(directory)).toEqual(['doc-kept']);
  });
});
