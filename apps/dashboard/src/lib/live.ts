import { API_BASE, bearer } from './api';

/**
 * A `change` event of the live stream. The stream is the embed API's own route, hidden from the partner
 * document, so its payload is written here by hand (the server's `AccountChanges` defines it).
 */
export interface Changes {
  conversations: string[];
  leads: string[];
  checklist_completed: string[];
  resync?: true;
}

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** Splits a text/event-stream chunk stream into events; returns what is left of an unfinished one. */
export function parseSse(buffer: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  const blocks = buffer.replace(/\r\n/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    const event: SseEvent = { event: 'message', data: '' };
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':') || line === '') continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') event.id = value;
      else if (field === 'event') event.event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0 || event.id !== undefined) {
      event.data = data.join('\n');
      events.push(event);
    }
  }
  return { events, rest };
}

const RETRY_MS = 2000;

/**
 * The account's live changes. EventSource cannot send an Authorization header, so the stream is read
 * with fetch (not the typed client: the answer is a stream, and a failure means reconnecting, not an
 * error to show); it reconnects with the current token and `Last-Event-ID`, so nothing is missed.
 */
export function subscribeLive(
  accountId: string,
  getToken: () => string,
  onChanges: (changes: Changes) => void,
  onUnauthorized: () => void,
): () => void {
  let lastEventId: string | undefined;
  let stopped = false;
  let controller: AbortController | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const connect = async () => {
    controller = new AbortController();
    const token = getToken();
    try {
      const response = await fetch(`${API_BASE}/accounts/${encodeURIComponent(accountId)}/events`, {
        headers: {
          authorization: bearer(token),
          accept: 'text/event-stream',
          ...(lastEventId && { 'last-event-id': lastEventId }),
        },
        signal: controller.signal,
        credentials: 'omit',
        cache: 'no-store',
      });
      // The token in use stopped working (expired, revoked): the session is over, stop retrying.
      if (response.status === 401 && token === getToken()) {
        stopped = true;
        onUnauthorized();
        return;
      }
      if (!response.ok || !response.body) throw new Error(`stream answered ${response.status}`);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseSse(buffer + value);
        buffer = parsed.rest;
        for (const event of parsed.events) {
          if (event.id !== undefined) lastEventId = event.id;
          if (event.event === 'change') onChanges(JSON.parse(event.data) as Changes);
        }
      }
    } catch {
      // Reconnects below, like EventSource does.
    }
    if (!stopped) retry = setTimeout(() => void connect(), RETRY_MS);
  };
  void connect();
  return () => {
    stopped = true;
    clearTimeout(retry);
    controller?.abort();
  };
}
