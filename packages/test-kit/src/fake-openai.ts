import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A chat message as the client sent it (content is a string or an array of content parts). */
export interface FakeChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** The body of one `POST /v1/chat/completions`, as received. */
export interface FakeChatRequest {
  model: string;
  messages: FakeChatMessage[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  [field: string]: unknown;
}

/**
 * What the fake answers to one request:
 * - `text` (and/or `toolCalls`): a completion with that assistant content and those function calls;
 * - `error`: an OpenAI error body with that HTTP status (`retryAfter` seconds as a header);
 * - `delayMs`: wait that long before answering (a slow model; the client's timeout may fire first).
 */
export interface FakeChatReply {
  text?: string | null;
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
  error?: { status: number; message?: string; type?: string; code?: string | null; retryAfter?: number };
  delayMs?: number;
}

export type FakeResponder = (request: FakeChatRequest, index: number) => FakeChatReply;

export interface FakeOpenAi {
  /** Give this as `baseURL` (OPENAI_BASE_URL); it ends in `/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Every chat completion request received, in order (including ones answered with errors). */
  requests: FakeChatRequest[];
  /** Queues replies, used one per request before the responder is asked. */
  script(...replies: FakeChatReply[]): void;
  /** Answers every request once the script is used up (default: the text "OK"). */
  respondWith(responder: FakeResponder): void;
  close(): Promise<void>;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, {
    'content-type': 'application/json',
    'x-request-id': `req_${hex(8)}`,
    ...headers,
  });
  response.end(JSON.stringify(body));
}

/**
 * A local stand-in for OpenAI's Chat Completions endpoint, speaking its wire format: bearer auth,
 * `chat.completion` objects with `choices[].message.tool_calls`, `finish_reason` `tool_calls` or
 * `stop`, `usage`, and OpenAI's `{error: {message, type, param, code}}` bodies. Tests drive it with
 * the real `openai` client through `baseURL`.
 */
export async function startFakeOpenAi(options: { apiKey?: string } = {}): Promise<FakeOpenAi> {
  const apiKey = options.apiKey ?? `sk-test-${hex(12)}`;
  const requests: FakeChatRequest[] = [];
  const queue: FakeChatReply[] = [];
  let responder: FakeResponder = () => ({ text: 'OK' });
  const pendingTimers = new Set<NodeJS.Timeout>();

  const server = createServer((request, response) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const url = new URL(request.url ?? '/', 'http://fake');
      if (request.headers.authorization !== `Bearer ${apiKey}`) {
        return sendJson(response, 401, {
          error: {
            message: 'Incorrect API key provided.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        });
      }
      if (request.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
        return sendJson(response, 404, {
          error: {
            message: `Unknown path ${url.pathname}`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        });
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as FakeChatRequest;
      const index = requests.length;
      requests.push(body);
      const reply = queue.shift() ?? responder(body, index);
      if (reply.delayMs) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            pendingTimers.delete(timer);
            resolve();
          }, reply.delayMs);
          pendingTimers.add(timer);
          response.on('close', () => {
            clearTimeout(timer);
            pendingTimers.delete(timer);
            resolve();
          });
        });
        if (response.destroyed) return;
      }
      if (reply.error) {
        const { status, message, type, code, retryAfter } = reply.error;
        return sendJson(
          response,
          status,
          {
            error: {
              message: message ?? `Error ${status}`,
              type:
                type ??
                (status === 429
                  ? 'rate_limit_exceeded'
                  : status >= 500
                    ? 'server_error'
                    : 'invalid_request_error'),
              param: null,
              code: code ?? null,
            },
          },
          retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {},
        );
      }
      const toolCalls = (reply.toolCalls ?? []).map((call) => ({
        id: `call_${hex(12)}`,
        type: 'function' as const,
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      }));
      const content = reply.text ?? null;
      sendJson(response, 200, {
        id: `chatcmpl-${hex(12)}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        system_fingerprint: 'fp_fake',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content,
              refusal: null,
              ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
            },
            logprobs: null,
            finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
    })().catch((error: unknown) => {
      if (!response.headersSent)
        sendJson(response, 500, {
          error: { message: String(error), type: 'server_error', param: null, code: null },
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    script: (...replies) => void queue.push(...replies),
    respondWith: (next) => {
      responder = next;
    },
    async close() {
      for (const timer of pendingTimers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
