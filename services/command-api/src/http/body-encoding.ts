import { DomainError } from '@leadline/runtime';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `charset=…` of a Content-Type, lowercased, if it names one. */
const charsetOf = (contentType: string | undefined) =>
  /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();

/**
 * JSON bodies as RFC 8259 has them: UTF-8. Another declared charset is a 415, and bytes that are not
 * UTF-8 a 400, where Fastify's parser would have stored U+FFFD in their place. Parsing is then
 * Fastify's own (prototype poisoning refused).
 */
export function parseJsonAsUtf8(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(
        new DomainError(415, 'unsupported_media_type', `JSON bodies are UTF-8; charset=${charset} is not.`),
        undefined,
      );
      return;
    }
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new DomainError(400, 'bad_request', 'The body is not valid UTF-8.'), undefined);
      return;
    }
    parse(request, text, done);
  });
}

/**
 * Bodies arrive as sent: a `Content-Encoding` other than `identity` (gzip, br…) is a 415, since the
 * server does not decompress and would otherwise read compressed bytes as the body. A callback hook,
 * not an async one: it runs on every request, and has nothing to wait for.
 */
export function refuseContentEncoding(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
) {
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    done(
      new DomainError(
        415,
        'unsupported_media_type',
        `Content-Encoding ${encoding} is not supported: send the body uncompressed.`,
      ),
    );
    return;
  }
  done();
}
