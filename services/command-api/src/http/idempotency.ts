import { createHash } from 'node:crypto';
import { DomainError, type Clock, type Database } from '@leadline/runtime';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql, type Kysely } from 'kysely';
import stableStringify from 'safe-stable-stringify';

/** How long an answer is kept for its retries (Stripe's 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a running request holds its key. Every command is bounded by the event log's and the
 * projection's timeouts, far below this; past it the holder is taken to have died with its process,
 * and a retry may run the request again rather than get a 409 for a day.
 */
export const IDEMPOTENCY_LOCK_MS = 2 * 60 * 1000;
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
const PURGE_INTERVAL_MS = 60_000;

/** The methods that take an Idempotency-Key. */
const KEYED_METHODS = new Set(['POST', 'PATCH']);
const asArray = <T>(hooks: T | T[] | undefined): T[] =>
  hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];

/** The answer headers a replay repeats: the rest (rate limits, request ids) belong to each request. */
const REPLAYED_HEADERS = ['content-type', 'location'] as const;

interface Held {
  partnerId: string;
  key: string;
  owner: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set while this request holds an Idempotency-Key: its answer is stored when it is sent. */
    idempotency?: Held;
  }
}

const invalidKey = () =>
  new DomainError(
    400,
    'invalid_idempotency_key',
    `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters.`,
  );

/**
 * What makes two requests "the same": method, path with query, and the body with its keys sorted (so
 * a client that serializes fields in another order still matches). A multipart upload's file is read
 * by its handler, after this check: uploads match on method and path.
 */
function requestHash(request: FastifyRequest): string {
  const multipart = request.headers['content-type']?.toLowerCase().startsWith('multipart/') ?? false;
  const body = multipart ? null : (request.body ?? null);
  return createHash('sha256')
    .update(`${request.method}\n${request.url}\n${stableStringify(body) ?? 'null'}`)
    .digest('hex');
}

/**
 * `Idempotency-Key` on every POST and PATCH of the scope it is registered in (Stripe's semantics): the
 * first request with a key runs and its answer is stored for 24 hours, per partner; a retry with the
 * same method, path and body gets that answer again, byte for byte, and runs nothing. The key is
 * reserved with one INSERT … ON CONFLICT, so of concurrent retries exactly one runs, on any instance.
 * Answers of 5xx are not stored: the key is released and a retry runs again. Requests that fail
 * validation never reach the check, so they hold nothing either.
 */
export function idempotencyKeys(app: FastifyInstance, deps: { db: Kysely<Database>; clock: Clock }) {
  const { db, clock } = deps;
  let lastPurge = 0;

  function purgeExpired(request: FastifyRequest, now: Date) {
    if (now.getTime() - lastPurge < PURGE_INTERVAL_MS) return;
    lastPurge = now.getTime();
    // Off the request's path, in bounded slices; expired rows are ignored by every read meanwhile.
    void sql`
      delete from idempotency_keys where ctid = any(array(
        select ctid from idempotency_keys where expires_at <= ${now} limit 1000))`
      .execute(db)
      .catch((error: unknown) =>
        request.log.warn({ err: error }, 'could not purge expired idempotency keys'),
      );
  }

  /** Takes the key (new, expired, or abandoned by a dead holder); false if another request has it. */
  async function reserve(held: Held, hash: string, now: Date): Promise<boolean> {
    const { rows } = await sql<{ owner: string }>`
      insert into idempotency_keys
        (partner_id, key, request_hash, owner, locked_until, created_at, expires_at)
      values (${held.partnerId}, ${held.key}, ${hash}, ${held.owner},
              ${new Date(now.getTime() + IDEMPOTENCY_LOCK_MS)}, ${now},
              ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS)})
      on conflict (partner_id, key) do update set
        request_hash = excluded.request_hash, owner = excluded.owner,
        locked_until = excluded.locked_until, created_at = excluded.created_at,
        expires_at = excluded.expires_at, response_status = null, response_headers = null,
        response_body = null
      where idempotency_keys.expires_at <= ${now}
         or (idempotency_keys.response_status is null and idempotency_keys.locked_until <= ${now})
      returning owner`.execute(db);
    return rows[0]?.owner === held.owner;
  }

  async function check(request: FastifyRequest, reply: FastifyReply) {
    if (!KEYED_METHODS.has(request.method)) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    if (
      typeof header !== 'string' ||
      header.length === 0 ||
      header.length > IDEMPOTENCY_KEY_MAX_LENGTH ||
      !/^[\x20-\x7e]+$/.test(header)
    ) {
      throw invalidKey();
    }
    const now = clock.now();
    const held: Held = { partnerId: request.partner.id, key: header, owner: request.id };
    const hash = requestHash(request);
    purgeExpired(request, now);
    // A second pass covers a holder that released the key (a 5xx) between our insert and our read.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await reserve(held, hash, now)) {
        request.idempotency = held;
        return;
      }
      const stored = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('partner_id', '=', held.partnerId)
        .where('key', '=', held.key)
        .executeTakeFirst();
      if (!stored) continue;
      if (stored.request_hash !== hash) {
        throw new DomainError(
          422,
          'idempotency_key_reused',
          'This Idempotency-Key was used with another request (method, path or body); use a new key.',
        );
      }
      if (stored.response_status === null || stored.response_body === null) {
        throw new DomainError(
          409,
          'idempotency_key_in_progress',
          'A request with this Idempotency-Key is still running; retry after it has answered.',
        );
      }
      reply.code(stored.response_status);
      for (const [name, value] of Object.entries(stored.response_headers ?? {})) reply.header(name, value);
      reply.header('idempotent-replayed', 'true');
      return reply.send(stored.response_body);
    }
    throw new DomainError(
      409,
      'idempotency_key_in_progress',
      'A request with this Idempotency-Key is still running; retry after it has answered.',
    );
  }

  async function store(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const held = request.idempotency;
    if (!held) return payload;
    request.idempotency = undefined;
    const body =
      typeof payload === 'string' ? Buffer.from(payload) : Buffer.isBuffer(payload) ? payload : undefined;
    try {
      if (reply.statusCode >= 500 || body === undefined) {
        // A 5xx (or a streamed answer, which cannot be replayed) releases the key: a retry runs again.
        await db
          .deleteFrom('idempotency_keys')
          .where('partner_id', '=', held.partnerId)
          .where('key', '=', held.key)
          .where('owner', '=', held.owner)
          .execute();
        return payload;
      }
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      await db
        .updateTable('idempotency_keys')
        .set({
          owner: null,
          locked_until: null,
          response_status: reply.statusCode,
          response_headers: JSON.stringify(headers),
          response_body: body,
        })
        .where('partner_id', '=', held.partnerId)
        .where('key', '=', held.key)
        .where('owner', '=', held.owner)
        .execute();
    } catch (error) {
      // The request has run: its answer goes out even so. Retries get a 409 until the hold runs out.
      request.log.error({ err: error }, 'could not store the answer of an idempotent request');
    }
    return payload;
  }

  // On the routes that take a key only, as their own hooks: a GET (most requests) runs neither. Route
  // hooks run after the scope's, and nothing else here has a preHandler or onSend, so the order is the
  // one scope hooks had.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((method) => KEYED_METHODS.has(method))) return;
    route.preHandler = [check, ...asArray(route.preHandler)];
    route.onSend = [...asArray(route.onSend), store];
  });
}
