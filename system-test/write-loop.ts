import type { PartnerClient } from './client';

/** What a client of the write loop did in one request. */
export type WriteOp = 'import' | 'bulk' | 'message';

export interface WriteOutcome {
  op: WriteOp;
  client: number;
  account: string;
  status: number;
  code: string | undefined;
  retryAfter: string | undefined;
  /** When the request was sent and answered, in `performance.now()` time. */
  sentAt: number;
  answeredAt: number;
  /** The phones the write imports (none for a message). */
  phones: string[];
  /** The message's id, for an acknowledged manual message. */
  messageId?: string;
  /** A message's recipient and text: together unique in a loop, so what reached Twilio can be counted. */
  to?: string;
  body?: string;
  /**
   * For an acknowledged import: whether a GET sent right after the answer found the lead (the
   * command waits for the projector, so it must).
   */
  readBack?: boolean;
  /** That GET's status (a 503 while the database restarts, say). */
  readStatus?: number;
}

export interface WriteLoop {
  outcomes: WriteOutcome[];
  /** Acknowledged (2xx) writes so far. */
  acknowledged(): number;
  /** Resolves once `count` more writes than now are acknowledged, or rejects past `timeoutMs`. */
  acknowledgedMore(count: number, timeoutMs?: number): Promise<void>;
  /** Stops every client after its request in flight. */
  stop(): Promise<void>;
}

/**
 * `clients` partners' clients writing through the command API at once, one request after another
 * until stopped, each on an account of `accounts` (client modulo their number): single lead imports,
 * bulk imports of five and manual messages to leads it imported, every answer recorded. Each client
 * writes its own phones, so what each acknowledged write should have put on the log is known.
 */
export function startWriteLoop(options: {
  partner: PartnerClient;
  accounts: readonly string[];
  clients: number;
  /**
   * How long a client waits after a refusal before its next write, as a client honouring Retry-After
   * would (not the whole second it says: the loop measures how soon writes succeed again). None by
   * default: each client writes again at once.
   */
  pauseAfterRefusalMs?: number;
}): WriteLoop {
  const { partner, accounts, clients, pauseAfterRefusalMs = 0 } = options;
  const outcomes: WriteOutcome[] = [];
  let stopping = false;
  const acknowledged = () => outcomes.filter((outcome) => outcome.status < 300).length;

  const client = async (index: number) => {
    const account = accounts[index % accounts.length]!;
    const imported: string[] = [];
    // Phones unique to the client: +1512 then the client's two digits, then a running number.
    const phone = (k: number) => `+1512${String(index).padStart(2, '0')}${String(k).padStart(5, '0')}`;
    for (let n = 0; !stopping; n++) {
      const op = (['import', 'bulk', 'message'] as const)[imported.length === 0 ? 0 : n % 3]!;
      const outcome: WriteOutcome = {
        op,
        client: index,
        account,
        status: 0,
        code: undefined,
        retryAfter: undefined,
        sentAt: performance.now(),
        answeredAt: 0,
        phones: [],
      };
      let response: Awaited<ReturnType<PartnerClient['post']>>;
      if (op === 'import') {
        outcome.phones = [phone(n * 5)];
        response = await partner.post(`/accounts/${account}/leads`, {
          phone: outcome.phones[0],
          name: `Lead ${n}`,
        });
      } else if (op === 'bulk') {
        outcome.phones = [1, 2, 3, 4, 5].map((k) => phone(n * 5 + k));
        response = await partner.post(`/accounts/${account}/leads/bulk`, {
          leads: outcome.phones.map((p) => ({ phone: p })),
        });
      } else {
        const to = imported[n % imported.length]!;
        outcome.to = to;
        outcome.body = `Message ${n}`;
        response = await partner.post(
          `/accounts/${account}/conversations/${encodeURIComponent(to)}/messages`,
          { body: outcome.body },
        );
        if (response.status < 300) outcome.messageId = response.body.message_id;
      }
      outcome.answeredAt = performance.now();
      outcome.status = response.status;
      outcome.code = response.body?.code;
      outcome.retryAfter = response.headers['retry-after'] as string | undefined;
      if (response.status < 300 && op !== 'message') {
        imported.push(...outcome.phones);
        const read = await partner.get(
          `/accounts/${account}/leads/${encodeURIComponent(outcome.phones[0]!)}`,
        );
        outcome.readBack = read.status === 200;
        outcome.readStatus = read.status;
      }
      outcomes.push(outcome);
      if (response.status >= 300 && pauseAfterRefusalMs > 0)
        await new Promise((resolve) => setTimeout(resolve, pauseAfterRefusalMs));
    }
  };
  const running = Array.from({ length: clients }, (_, index) => client(index));

  return {
    outcomes,
    acknowledged,
    async acknowledgedMore(count, timeoutMs = 60_000) {
      const target = acknowledged() + count;
      const deadline = Date.now() + timeoutMs;
      while (acknowledged() < target) {
        if (Date.now() > deadline)
          throw new Error(
            `the write loop acknowledged ${acknowledged()} writes, not ${target}, in ${timeoutMs} ms`,
          );
        // A client that failed (a thrown error) ends the wait with its error.
        await Promise.race([Promise.all(running), new Promise((resolve) => setTimeout(resolve, 100))]);
      }
    },
    async stop() {
      stopping = true;
      await Promise.all(running);
    },
  };
}

/**
 * The longest time writes were unavailable: the longest stretch, from one acknowledgement to the
 * next (whichever client's), in which none was acknowledged; and the slowest single answer.
 */
export function longestUnavailability(outcomes: readonly WriteOutcome[]): {
  gapMs: number;
  slowestMs: number;
} {
  const acknowledgedAt = outcomes
    .filter((outcome) => outcome.status < 300)
    .map((outcome) => outcome.answeredAt)
    .sort((a, b) => a - b);
  let gapMs = 0;
  for (let i = 1; i < acknowledgedAt.length; i++)
    gapMs = Math.max(gapMs, acknowledgedAt[i]! - acknowledgedAt[i - 1]!);
  const slowestMs = Math.max(0, ...outcomes.map((outcome) => outcome.answeredAt - outcome.sentAt));
  return { gapMs: Math.round(gapMs), slowestMs: Math.round(slowestMs) };
}
