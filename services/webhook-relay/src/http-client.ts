import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { resolveTarget, TargetRefusedError, type Resolver } from './ssrf';

export interface SendResult {
  /** Null when no HTTP answer arrived (refused target, connection error, timeout). */
  statusCode: number | null;
  error: string | null;
  retryAfter: string | undefined;
  durationMs: number;
  /** The first KB of the answer body, for the deliveries log. */
  responseExcerpt: string | null;
}

export interface WebhookClient {
  post(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
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

  async function post(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failure = (error: string): SendResult => ({
      statusCode: null,
      error,
      retryAfter: undefined,
      durationMs: elapsed(),
      responseExcerpt: null,
    });

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
        resolve(result);
      };
      const payload = Buffer.from(body, 'utf8');
      const request = https.request(target, {
        method: 'POST',
        agent,
        lookup: pinned,
        headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers },
      });
      const timer = setTimeout(() => {
        request.destroy();
        settle(failure(`No answer within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      request.on('error', (error) => settle(failure(error.message)));
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (chunks.reduce((sum, part) => sum + part.length, 0) < EXCERPT_BYTES) chunks.push(chunk);
          if (read > MAX_READ_BYTES) response.destroy();
        });
        const finish = () => {
          const status = response.statusCode ?? 0;
          const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
          const ok = status >= 200 && status < 300;
          const retryAfter = response.headers['retry-after'];
          settle({
            statusCode: status,
            error: ok
              ? null
              : status >= 300 && status < 400
                ? `Redirect to ${response.headers.location ?? '(no location)'} not followed`
                : `HTTP ${status}`,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
            durationMs: elapsed(),
            responseExcerpt: excerpt || null,
          });
        };
        response.on('end', finish);
        response.on('close', finish);
        response.on('error', () => finish());
      });
      request.end(payload);
    });
  }

  return { post, close: () => agent.destroy() };
}
