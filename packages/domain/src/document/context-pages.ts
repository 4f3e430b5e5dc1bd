import type { NewEvent } from '@leadline/events';

/** What fetching a context page found: new text, nothing new since the last fetch, or a failure. */
export type PageFetch =
  | {
      kind: 'fetched';
      title: string | null;
      content: string;
      contentHash: string;
      etag: string | null;
      lastModified: string | null;
    }
  | { kind: 'unchanged'; etag: string | null; lastModified: string | null }
  | { kind: 'failed'; error: string };

/** The events a page fetch becomes. */
export function pageFetchEvents(urlId: string, fetched: PageFetch): NewEvent[] {
  switch (fetched.kind) {
    case 'fetched':
      return [
        {
          type: 'context_url.fetched',
          data: {
            url_id: urlId,
            unchanged: false,
            title: fetched.title,
            content: fetched.content,
            content_hash: fetched.contentHash,
            etag: fetched.etag,
            last_modified: fetched.lastModified,
          },
        },
      ];
    case 'unchanged':
      return [
        {
          type: 'context_url.fetched',
          data: {
            url_id: urlId,
            unchanged: true,
            title: null,
            content: null,
            content_hash: null,
            etag: fetched.etag,
            last_modified: fetched.lastModified,
          },
        },
      ];
    case 'failed':
      return [{ type: 'context_url.fetch_failed', data: { url_id: urlId, error: fetched.error } }];
    default: {
      const unknown: never = fetched;
      throw new Error(`Unknown fetch ${String(unknown)}`);
    }
  }
}
