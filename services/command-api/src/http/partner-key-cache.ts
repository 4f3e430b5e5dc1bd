import { listenToChannel, type ReconnectBackoff } from '@leadline/runtime';

/** Notified by a trigger on `partner_api_keys` with the old key hash, at the commit of a revocation. */
export const PARTNER_KEY_CHANNEL = 'leadline_partner_key_changes';

/** How often the listening connection is asked to prove it is alive. */
const HEARTBEAT_MS = 250;
/**
 * How long a heartbeat's answer vouches for the cache. Every notification committed before the
 * answer was delivered before it, so a key revoked on any instance is refused here within this bound
 * even when the listening connection died silently (a partition sends no error).
 */
const TRUST_MS = 1000;
/** Keys kept at most; beyond it the cache starts over (live keys are few: five a partner). */
const MAX_ENTRIES = 50_000;

export interface PartnerKeyRow {
  id: string;
  partner_id: string;
}

export interface PartnerKeyCacheOptions {
  /** Pool one connection of which listens (destroyed, not returned, on close). */
  pool: Parameters<typeof listenToChannel>[0];
  reconnectBackoff?: ReconnectBackoff;
  /** A lost listening connection or a failed attempt to listen again; a warning by default. */
  onListenerError?: (error: Error) => void;
}

export interface PartnerKeyCache {
  /**
   * The live key with this hash: from memory while the cache can be trusted, otherwise `lookup`
   * (the database). Only a lookup that began while the cache was trusted, and that no change or lost
   * connection overtook, is kept.
   */
  find(
    keyHash: string,
    lookup: (keyHash: string) => Promise<PartnerKeyRow | undefined>,
  ): Promise<PartnerKeyRow | undefined>;
  close(): void;
}

/**
 * Live partner keys in memory, forgotten when a trigger announces their revocation. While the
 * listening connection is lost, or has not proved alive for `TRUST_MS`, every request looks its key
 * up in the database, and nothing looked up then is kept: what was announced in the meantime is lost.
 */
export async function createPartnerKeyCache(options: PartnerKeyCacheOptions): Promise<PartnerKeyCache> {
  const entries = new Map<string, PartnerKeyRow>();
  // Moves with every change heard and every lost connection: a lookup that a change overtook (its
  // read may predate the change) is answered but not kept.
  let generation = 0;
  let listening = false;
  let aliveAt = -Infinity;
  const trusted = () => listening && performance.now() - aliveAt <= TRUST_MS;
  const forgetAll = () => {
    entries.clear();
    generation++;
  };
  const warn =
    options.onListenerError ??
    ((error: Error) => console.warn(`partner key cache: listener: ${error.message}`));

  const listener = await listenToChannel(
    options.pool,
    PARTNER_KEY_CHANNEL,
    {
      onNotification: (keyHash) => {
        entries.delete(keyHash);
        generation++;
      },
      onAlive: () => {
        listening = true;
        aliveAt = performance.now();
      },
      onError: (error) => {
        listening = false;
        forgetAll();
        warn(error);
      },
      // Listening again: revocations announced while nobody listened were not heard.
      onReconnect: forgetAll,
    },
    options.reconnectBackoff,
    HEARTBEAT_MS,
  );

  return {
    async find(keyHash, lookup) {
      if (trusted()) {
        const cached = entries.get(keyHash);
        if (cached) return cached;
      }
      const keepable = trusted();
      const startedAt = generation;
      const row = await lookup(keyHash);
      if (row && keepable && generation === startedAt && listening) {
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(keyHash, row);
      }
      return row;
    },
    close() {
      listening = false;
      forgetAll();
      listener.close();
    },
  };
}
