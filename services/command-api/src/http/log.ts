import type { FastifyRequest } from 'fastify';

/** A URL without its query string: embed tokens travel in one, and logs must never hold them. */
export const withoutQuery = (url: string) => {
  const index = url.indexOf('?');
  return index === -1 ? url : `${url.slice(0, index)}?[redacted]`;
};

/** Fastify's request log fields, with the query string redacted. */
export function requestForLog(request: FastifyRequest) {
  return {
    method: request.method,
    url: withoutQuery(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
