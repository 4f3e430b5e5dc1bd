/** One server-sent event as the dashboard's EventSource would see it. */
export interface StreamEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

export interface EventStreamReader {
  /** The next named event (comments and bare `retry:` blocks skipped); throws 'stream ended' at its end. */
  next(): Promise<StreamEvent>;
  close(): void;
}

/**
 * The embed's live updates of `accountId` over real HTTP, read event by event: what the dashboard's
 * EventSource receives. `lastEventId` resumes as the browser does after a dropped stream.
 */
export async function openEventStream(
  baseUrl: string,
  accountId: string,
  token: string,
  lastEventId?: string,
): Promise<EventStreamReader> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/embed/api/accounts/${accountId}/events`, {
    headers: { authorization: `Bearer ${token}`, ...(lastEventId && { 'last-event-id': lastEventId }) },
    signal: controller.signal,
  });
  const type = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !type.startsWith('text/event-stream')) {
    controller.abort();
    throw new Error(`the event stream answered ${response.status} ${type}`);
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    async next() {
      for (;;) {
        const blocks = buffer.split('\n\n');
        while (blocks.length > 1) {
          const block = blocks.shift()!;
          buffer = blocks.join('\n\n');
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((line) => !line.startsWith(':') && line.includes(': '))
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
          );
          if (fields.event) {
            return { id: fields.id ?? '', event: fields.event, data: JSON.parse(fields.data ?? '{}') };
          }
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        buffer += value;
      }
    },
    close: () => controller.abort(),
  };
}
