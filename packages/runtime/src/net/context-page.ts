import { createHash } from 'node:crypto';
import { Readability } from '@mozilla/readability';
import type { PageFetch } from '@leadline/domain';
import { parseHTML } from 'linkedom';
import { contextLimits } from '@leadline/domain';
import { FetchFailedError, safeFetch } from './safe-fetch';

/** Every context page fetch is bounded in bytes and time, and goes through the SSRF guard. */
export const pageFetchLimits = { maxBytes: 2 * 1024 * 1024, timeoutMs: 10_000 };

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value) ?? null;

/** The page's `<title>` and its main text (Readability; the whole body's text when it finds no article). */
export function extractPage(html: string): { title: string | null; content: string } {
  const { document } = parseHTML(html);
  const title = document.querySelector('title')?.textContent?.trim() || null;
  let text: string | null | undefined;
  try {
    // linkedom's document is DOM-compatible enough for Readability, which is typed against lib.dom.
    type ReadabilityDocument = ConstructorParameters<typeof Readability>[0];
    text = new Readability(document as unknown as ReadabilityDocument, { charThreshold: 100 }).parse()
      ?.textContent;
  } catch {
    text = undefined;
  }
  if (!text?.trim()) text = parseHTML(html).document.body?.textContent ?? '';
  const content = (text ?? '')
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
    .slice(0, contextLimits.pageTextChars);
  return { title, content };
}

/**
 * Fetches a context page: conditional (If-None-Match / If-Modified-Since) when it was fetched before,
 * HTML or plain text only, its text extracted and hashed so an unchanged page is reported as such.
 */
export async function fetchPage(
  url: string,
  options: {
    allowPrivate: boolean;
    previous?: { etag: string | null; lastModified: string | null; contentHash: string | null };
  },
): Promise<PageFetch> {
  const headers: Record<string, string> = { accept: 'text/html, text/plain;q=0.9' };
  if (options.previous?.etag) headers['if-none-match'] = options.previous.etag;
  if (options.previous?.lastModified) headers['if-modified-since'] = options.previous.lastModified;
  try {
    const response = await safeFetch(url, {
      allowPrivate: options.allowPrivate,
      ...pageFetchLimits,
      headers,
    });
    const etag = header(response.headers.etag);
    const lastModified = header(response.headers['last-modified']);
    if (response.status === 304) return { kind: 'unchanged', etag, lastModified };
    if (response.status !== 200) return { kind: 'failed', error: `HTTP ${response.status}` };
    const type = header(response.headers['content-type']) ?? '';
    const body = response.body.toString('utf8');
    let page: { title: string | null; content: string };
    if (/text\/html|application\/xhtml/.test(type)) page = extractPage(body);
    else if (/text\/plain|text\/markdown/.test(type))
      page = { title: null, content: body.slice(0, contextLimits.pageTextChars) };
    else return { kind: 'failed', error: `Unsupported content type ${type || '(none)'}` };
    if (!page.content) return { kind: 'failed', error: 'The page has no text' };
    const contentHash = createHash('sha256').update(page.content).digest('hex');
    if (contentHash === options.previous?.contentHash) return { kind: 'unchanged', etag, lastModified };
    return { kind: 'fetched', ...page, contentHash, etag, lastModified };
  } catch (error) {
    if (error instanceof FetchFailedError) return { kind: 'failed', error: error.message };
    throw error;
  }
}
