/**
 * The one error family of the service. A `code` is stable and documented; the HTTP status says which
 * class of failure it is. The API's error handler turns these into RFC 9457 problem+json.
 */
export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (resource: string) =>
  new DomainError(404, `${resource}_not_found`, `No such ${resource}.`);

export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError(409, code, message, details);

export const unavailable = (code: string, message: string) => new DomainError(503, code, message);
