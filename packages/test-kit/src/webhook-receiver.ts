import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw bytes as they arrived: what the signature must cover. */
  body: Buffer;
  /** When the whole request had arrived (ms since the epoch, real time). */
  receivedAt: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Never answer (until the receiver closes). */
  hang?: boolean;
  /** Answer only after this long. */
  delayMs?: number;
  /** The answer's body, byte for byte (a short text by default). */
  body?: Buffer | string;
}

/** A self-signed certificate for 127.0.0.1 and localhost, made by openssl for this run only. */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'leadline-receiver-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A partner's HTTPS endpoint on loopback: records every request with its raw body and answers as
 * told per path (200 by default).
 */
export async function startReceiver(certificate = selfSignedCertificate()) {
  const requests: ReceivedRequest[] = [];
  const answers = new Map<string, (request: ReceivedRequest) => Answer>();
  const timers = new Set<NodeJS.Timeout>();
  const server = https.createServer({ key: certificate.key, cert: certificate.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    // A relay that dies mid-request resets the connection; that is the case under test, not an error.
    request.on('error', () => undefined);
    response.on('error', () => undefined);
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = {
        path: request.url ?? '/',
        headers: request.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      requests.push(received);
      const answer = answers.get(received.path)?.(received) ?? { status: 200 };
      if (answer.hang) return;
      const respond = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status, answer.headers ?? {});
        response.end(
          answer.body ?? (answer.status === 200 ? '{"received":true}' : `answer ${answer.status}`),
        );
      };
      if (answer.delayMs === undefined) respond();
      else timers.add(setTimeout(respond, answer.delayMs));
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ca: certificate.cert,
    url: (path: string) => `https://127.0.0.1:${port}${path}`,
    requests: (path?: string) => requests.filter((request) => path === undefined || request.path === path),
    answer(path: string, answer: Answer | ((request: ReceivedRequest) => Answer)) {
      answers.set(path, typeof answer === 'function' ? answer : () => answer);
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * The receiver's side of the signature check, written apart from the relay's code: OpenSSL's own
 * HMAC over the bytes that arrived, compared in constant time.
 */
export function opensslHmacHex(secret: string, payload: Buffer): string {
  const output = execFileSync('openssl', ['dgst', '-sha256', '-hmac', secret], { input: payload }).toString();
  return output.trim().split('= ').at(-1)!;
}
