import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Clock } from '../clock';
import { loadConfig } from '../config';
import {
  createDocumentLinks,
  DEVELOPMENT_DOCUMENT_LINK_KEY,
  documentLinkConfig,
  documentLinkKeys,
} from './links';

const at = (iso: string): Clock => ({ now: () => new Date(iso) });
const clock = at('2026-03-01T12:00:00Z');
const linksWith = (keys: Buffer[]) =>
  createDocumentLinks({ publicUrl: 'https://api.example.com', keys, clock });

/** What the document route reads back from a link. */
function opens(links: ReturnType<typeof linksWith>, url: string): boolean {
  const { pathname, searchParams } = new URL(url);
  const documentId = decodeURIComponent(pathname.split('/').at(-1)!);
  return links.verify(documentId, searchParams.get('expires')!, searchParams.get('signature')!);
}

describe('document links across a key rotation', () => {
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
  const before = linksWith([oldKey]);
  const during = linksWith([newKey, oldKey]);
  const after = linksWith([newKey]);

  it('a link handed out before the rotation still opens after it, while its key is listed', () => {
    const handedOut = before.url('doc-1');
    expect(opens(during, handedOut)).toBe(true);
    // New links are signed with the newest key, so they outlive the old one.
    const signedDuring = during.url('doc-1');
    expect(signedDuring).not.toBe(handedOut);
    expect(opens(after, signedDuring)).toBe(true);
  });

  it('a link signed with a key taken off the list does not open', () => {
    expect(opens(after, before.url('doc-1'))).toBe(false);
    expect(opens(linksWith([randomBytes(32)]), during.url('doc-1'))).toBe(false);
  });

  it('a link opens for its own document only, and not once it expired', () => {
    const url = during.url('doc-1');
    const { searchParams } = new URL(url);
    expect(during.verify('doc-2', searchParams.get('expires')!, searchParams.get('signature')!)).toBe(false);
    const later = createDocumentLinks({
      publicUrl: 'https://api.example.com',
      keys: [newKey, oldKey],
      clock: at('2026-03-09T12:00:00Z'),
    });
    expect(opens(later, url)).toBe(false);
  });
});

describe('the document link key settings', () => {
  const schema = z
    .object(documentLinkConfig)
    .transform((config, context) => ({ ...config, DOCUMENT_LINK_KEYS: documentLinkKeys(config, context) }));

  it('takes several keys, newest first', () => {
    const [newest, older] = [randomBytes(32), randomBytes(32)];
    const config = loadConfig(schema, {
      DOCUMENT_LINK_KEYS: `${newest.toString('base64')}, ${older.toString('hex')}`,
    });
    expect(config.DOCUMENT_LINK_KEYS).toEqual([newest, older]);
  });

  it('refuses a key of another length', () => {
    expect(() => loadConfig(schema, { DOCUMENT_LINK_KEYS: randomBytes(16).toString('hex') })).toThrow(
      /DOCUMENT_LINK_KEYS/,
    );
  });

  it('falls back to the development key outside production only', () => {
    expect(loadConfig(schema, {}).DOCUMENT_LINK_KEYS).toEqual([DEVELOPMENT_DOCUMENT_LINK_KEY]);
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/DOCUMENT_LINK_KEYS: Required/);
  });
});
