import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { cleanText } from '@leadline/events';
import { resolveTarget, TargetRefusedError, type Resolver } from './ssrf';

export interface SendResult {
  /** Null when no HTTP answer arrived (refused target, connection error, timeout). */
  statusCode: number | null;
  error: string | null;
  retryAfter: string | undefined;
  durationMs: number;
  /** The start of the answer body, decoded and made storable (no NUL, no lone surrogate). */
  responseExcerpt: string | null;
}

export interface WebhookClient {
  /** `signal` ends the request (the attempt's time budget ran out, or the relay is stopping). */
  post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<SendResult>;
  close(): void;
}

export interface WebhookClientOptions {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Extra trusted CAs; in production Node's NODE_EXTRA_CA_CERTS covers this, tests inject theirs. */
  ca?: string | Buffer | (string | Buffer)[];
  maxSockets?: number;
  resolver?: Resolver;
}

const EXCERPT_BYTES = 1024;
/** Answers longer than this are not read to the end; the socket is dropped instead. */
const MAX_READ_BYTES = 64 * 1024;

/**
 * What a receiver said, in a form every store accepts: its bytes are arbitrary (a NUL, megabytes of
 * garbage, a multi-byte character cut at the excerpt's end), and one unstorable answer must never
 * make the attempt's record fail, or the attempt would be sent again and again.
 */
export function storableExcerpt(bytes: Buffer): string | null {
  const text = cleanText(new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, EXCERPT_BYTES)));
  return text.length > 0 ? text : null;
}

/**
 * POSTs over node:https to the one address the SSRF check approved: the host is resolved and checked
 * first, and the socket's `lookup` returns exactly that address, so a second DNS answer can never
 * choose another. SNI and the Host header still name the host, so certificates verify normally.
 * Redirects are never followed (node:https does not), and the whole exchange has one deadline.
 */
export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: options.maxSockets ?? 64,
    ...(options.ca !== undefined && { ca: options.ca }),
  });

  /** Requests under way, ended by `close` (a relay shutting down does not wait for a hanging receiver). */
  const open = new Set<ReturnType<typeof https.request>>();
  let closed = false;

  async function post(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal?: AbortSignal,
  ): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failure = (error: string): SendResult => ({
      statusCode: null,
      error: cleanText(error).slice(0, 500),
      retryAfter: undefined,
      durationMs: elapsed(),
      responseExcerpt: null,
    });

    if (closed) return failure('The relay is shutting down');
    const target = new URL(url);
    if (target.protocol !== 'https:') return failure('Only https:// URLs are delivered to');
    let resolved;
    try {
      resolved = await resolveTarget(target.hostname, {
        allowPrivate: options.allowPrivateTargets,
        ...(options.resolver && { resolver: options.resolver }),
      });
    } catch (error) {
      if (error instanceof TargetRefusedError) return failure(error.message);
      throw error;
    }
    const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
      if (lookupOptions.all) callback(null, [resolved]);
      else callback(null, resolved.address, resolved.family);
    };

    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const settle = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
        open.delete(request);
        resolve(result);
      };
      const payload = Buffer.from(body, 'utf8');
      const request = https.request(target, {
        method: 'POST',
        agent,
        lookup: pinned,
        headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers },
      });
      open.add(request);
      const timer = setTimeout(() => {
        request.destroy();
        settle(failure(`No answer within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      const abort = () => {
        request.destroy();
        settle(failure('The attempt was abandoned'));
      };
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
      request.on('error', (error) => settle(failure(error.message)));
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          if (read < EXCERPT_BYTES) chunks.push(chunk);
          read += chunk.length;
          // Reading a short answer to its end keeps the connection for the next delivery.
          if (read > MAX_READ_BYTES) response.destroy();
        });
        const finish = () => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          const retryAfter = response.headers['retry-after'];
          settle({
            statusCode: status,
            error: ok
              ? null
              : status >= 300 && status < 400
                ? cleanText(`Redirect to ${response.headers.location ?? '(no location)'} not followed`).slice(
                    0,
                    500,
                  )
                : `HTTP ${status}`,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
            durationMs: elapsed(),
            responseExcerpt: storableExcerpt(Buffer.concat(chunks)),
          });
        };
        response.on('end', finish);
        response.on('close', finish);
        response.on('error', () => finish());
      });
      request.end(payload);
    });
  }

  return {
    post,
    close: () => {
      closed = true;
      for (const request of open) request.destroy(new Error('The relay is shutting down'));
      agent.destroy();
    },
  };
}
