import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { z } from 'zod';
import { resolveTarget, TargetRefusedError, type Resolver } from './ssrf';

/**
 * The one switch for every outbound fetch (context pages, MMS media, webhooks): `true` opens private,
 * loopback and link-local targets, for local testing only. `WEBHOOK_ALLOW_PRIVATE_TARGETS` keeps
 * opening webhook targets as before.
 */
export const outboundFetchConfig = {
  ALLOW_PRIVATE_TARGETS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true'),
};

export interface SafeFetchOptions {
  allowPrivate: boolean;
  /** Deadline for the whole exchange, redirects included. */
  timeoutMs: number;
  /** Bodies longer than this fail (the socket is dropped as soon as it is exceeded). */
  maxBytes: number;
  headers?: Record<string, string>;
  maxRedirects?: number;
  resolver?: Resolver;
}

export interface SafeFetchResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  url: string;
}

export class FetchFailedError extends Error {
  constructor(
    message: string,
    readonly reason: 'refused' | 'too_large' | 'timeout' | 'network' | 'redirects',
  ) {
    super(message);
    this.name = 'FetchFailedError';
  }
}

/**
 * GET through the SSRF guard: the host is resolved once and checked, the socket connects to that
 * address only (SNI and Host still name the host), redirects are followed by hand (each hop checked
 * again), and the body and the time are bounded.
 */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<SafeFetchResult> {
  const deadline = Date.now() + options.timeoutMs;
  let current = new URL(url);
  let headers = { ...options.headers };
  for (let hop = 0; hop <= (options.maxRedirects ?? 5); hop++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:') {
      throw new FetchFailedError(`Only http and https URLs are fetched (${current.protocol})`, 'refused');
    }
    if (current.username || current.password) {
      throw new FetchFailedError('URLs with credentials are not fetched', 'refused');
    }
    let target;
    try {
      target = await resolveTarget(current.hostname, {
        allowPrivate: options.allowPrivate,
        ...(options.resolver && { resolver: options.resolver }),
      });
    } catch (error) {
      if (error instanceof TargetRefusedError) throw new FetchFailedError(error.message, 'refused');
      throw error;
    }
    const result = await getOnce(current, target, { ...options, headers }, deadline);
    const location = result.headers.location;
    if (result.status >= 300 && result.status < 400 && result.status !== 304 && location) {
      const next = new URL(location, current);
      // Credentials go to the origin they were meant for only (Twilio redirects media to a CDN).
      if (next.origin !== current.origin && headers.authorization) {
        const { authorization: _dropped, ...rest } = headers;
        headers = rest;
      }
      current = next;
      continue;
    }
    return { ...result, url: current.toString() };
  }
  throw new FetchFailedError('Too many redirects', 'redirects');
}

function getOnce(
  url: URL,
  target: { address: string; family: 4 | 6 },
  options: SafeFetchOptions,
  deadline: number,
): Promise<Omit<SafeFetchResult, 'url'>> {
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return reject(new FetchFailedError('Timed out', 'timeout'));
    const request = client.get(url, {
      lookup: pinned,
      headers: { 'user-agent': 'Leadline/1.0', ...options.headers },
    });
    const timer = setTimeout(() => {
      request.destroy(new FetchFailedError(`No complete answer within ${options.timeoutMs} ms`, 'timeout'));
    }, remaining);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error instanceof FetchFailedError ? error : new FetchFailedError(error.message, 'network'));
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          request.destroy(new FetchFailedError(`The answer exceeds ${options.maxBytes} bytes`, 'too_large'));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => {
        clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) });
      });
      response.on('error', (error) => {
        clearTimeout(timer);
        reject(error instanceof FetchFailedError ? error : new FetchFailedError(error.message, 'network'));
      });
    });
  });
}
