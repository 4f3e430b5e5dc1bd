import { type EventCodec, type EventOf, type TopicNames } from '@leadline/events';
import {
  decodeRecord,
  optedOutPhones,
  parkingHandler,
  SMS_GATEWAY_PARKING,
  sortOutRecords,
  type Clock,
  type CommandBus,
  type CommandContext,
  type Database,
  type LogConsumerDeps,
  type OutboxReport,
  type PositionedEvent,
  watchQueue,
  runRemoteCall,
} from '@leadline/runtime';
import { SmsRejectedError, type AcceptedSms, type SmsSender } from '@leadline/telephony';
import type { Kafka } from 'kafkajs';
import { sql, type Kysely } from 'kysely';
import {
  claimPending,
  claimUnreported,
  enqueue,
  markReported,
  markSending,
  settleInterrupted,
  settleRefused,
  settleSending,
  type OutboxRow,
  type OwedSettlement,
} from './outbox';

export interface GatewayDeps {
  kafka: Kafka;
  /** The gateway's own connections, for the outbox (outside the commands' transactions). */
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  commands: CommandBus;
  sender: SmsSender;
  clock: Clock;
  groupId: string;
  /** Accounts worked on at once; one account's messages always go out one by one, in order. */
  concurrency?: number;
  /** Rows of one account decided at once (one lock, one wait for the read models). */
  decisionBatch?: number;
  /** Bound on one call to the provider; past it the send's outcome is unknown and reconcile settles it. */
  sendTimeoutMs?: number;
  /** A manual or compliance message older than this when its turn comes fails as `expired`. */
  maxQueueAgeMs?: number;
  leaseMs?: number;
  /** How long a send may take before its row counts as interrupted (well above the client's timeout). */
  sendingGraceMs?: number;
  /** How long an interrupted send waits for the provider's status callback before it counts as failed. */
  sendingTimeoutMs?: number;
  pollIntervalMs?: number;
  onError?: (error: unknown) => void;
  onParked?: LogConsumerDeps['onParked'];
  parkedPollMs?: number;
}

export interface RunningGateway {
  /** Sends what is pending now (tests and the bench call it instead of waiting for the poll). */
  dispatch(): Promise<number>;
  /** Settles interrupted sends from what the read models learned (status callbacks). */
  reconcile(): Promise<number>;
  stop(): Promise<void>;
}

/** What the gateway knows of the account when it decides whether a row may be sent. */
interface AccountState {
  status: string;
  phone_number: string;
}

/**
 * The only code that sends SMS. It consumes `message.outbound_requested` into its outbox (one row per
 * message id, so a redelivered request is never sent twice) and sends each row in the runtime's
 * remote-call shape, so no transaction and no lock is open while the provider is called:
 *   1. decide, in a short transaction on the account's decide-and-append path (its lock, read models
 *      caught up): a refused row (opted-out number except the compliance replies, deactivated account,
 *      a manual message that waited longer than `maxQueueAgeMs`) is settled failed and committed, and
 *      only then reported with `message.failed`;
 *   2. claim: the row is marked `sending` (committed), so it is never sent again;
 *   3. call the provider, bounded by `sendTimeoutMs`, with nothing open in the database;
 *   4. record: the row is settled with the event that reports it; at the end of the pass every outcome
 *      of the account's pass (the refusals of 1 included) is appended at once, in the rows' order: one
 *      append per account and pass, with no lock and no wait for the projector (the next decision
 *      waits for the log anyway).
 * A decision covers at most `decisionBatch` rows of one account; the claim of each row checks the
 * number's opt-out again, and a number that opted out since is decided again (and refused).
 *
 * The one ambiguous window: the provider accepted the message but we did not record it (a crash, or an
 * error that leaves the outcome unknown, such as a timeout). Such a row stays `sending` and is never
 * sent again; `reconcile` settles it from the status callback, whose URL carries our message id:
 * once the callback is projected the row is recorded as sent; with no callback within
 * `sendingTimeoutMs` it is recorded as failed (`send_unconfirmed`). A row settled but not yet reported
 * (a crash between the two) is reported by `reconcile` too.
 */
export async function startSmsGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const { kafka, db, codec, topics, commands, sender, clock } = deps;
  const concurrency = deps.concurrency ?? 4;
  const decisionBatch = deps.decisionBatch ?? 50;
  const leaseMs = deps.leaseMs ?? 60_000;
  const graceMs = deps.sendingGraceMs ?? 60_000;
  const timeoutMs = deps.sendingTimeoutMs ?? 10 * 60_000;
  const sendTimeoutMs = deps.sendTimeoutMs ?? 30_000;
  const maxQueueAgeMs = deps.maxQueueAgeMs ?? 60 * 60_000;
  const onError = deps.onError ?? ((error) => console.error('sms-gateway:', error));

  const contextOf = (row: OutboxRow): CommandContext => ({
    partnerId: row.partner_id,
    actor: { kind: 'system', service: 'sms-gateway' },
    correlationId: row.correlation_id,
    causationId: row.causation_id,
  });

  const failure = (
    row: OutboxRow,
    reason: EventOf<'message.failed'>['data']['reason'],
    message: string,
    errorCode: string | null = null,
  ): OutboxReport => ({
    type: 'message.failed',
    data: {
      message_id: row.message_id,
      phone: row.phone,
      reason,
      error_code: errorCode,
      error_message: message,
    },
  });

  /** Why `row` may not be sent now, as the event that reports it; undefined when it may go out. */
  function refusal(
    row: OutboxRow,
    account: AccountState | undefined,
    optedOut: boolean,
  ): OutboxReport | undefined {
    if (!account || account.status !== 'active')
      return failure(row, 'account_deactivated', 'The account is deactivated.');
    // Compliance replies (the STOP confirmation itself) are the only messages an opted-out number gets.
    if (optedOut && row.source !== 'system') return failure(row, 'lead_opted_out', 'The number opted out.');
    // A backlog (after an outage) must not go out hours late, at night; sequence and AI sends follow
    // their sending window instead.
    const requestedAt = row.requested_at ?? row.created_at;
    if (row.expirable && clock.now().getTime() - requestedAt.getTime() > maxQueueAgeMs)
      return failure(
        row,
        'expired',
        `The message waited longer than ${maxQueueAgeMs / 60_000} minutes to be sent.`,
      );
    return undefined;
  }

  /** Appends what settled rows owe the log, one append per account, then notes them reported. */
  async function report(rows: readonly { row: OutboxRow; report: OutboxReport }[], readYourWrites = false) {
    const byAccount = Map.groupBy(rows, ({ row }) => row.account_id);
    for (const settled of byAccount.values()) {
      const first = settled[0]!.row;
      await commands.append({
        stream: { topic: 'account', accountId: first.account_id },
        context: contextOf(first),
        // Each outcome traced to its own message's request, though they share one append.
        events: settled.map(({ row, report }) => ({
          ...report,
          correlationId: row.correlation_id,
          causationId: row.causation_id,
        })),
        readYourWrites,
      });
      await markReported(
        db,
        settled.map(({ row }) => row.message_id),
        clock.now(),
      );
    }
  }

  /**
   * The short decision: under the account's lock, against caught-up read models, refused rows are
   * settled in the same transaction; the rows that may go out are returned with the account's number.
   */
  async function decide(accountId: string, rows: readonly OutboxRow[]) {
    const { result } = await commands.execute({
      stream: { topic: 'account', accountId },
      context: contextOf(rows[0]!),
      lockKeys: [`account:${accountId}`],
      consistency: 'partition',
      async decide(trx) {
        const account = await trx
          .selectFrom('accounts')
          .select(['status', 'phone_number'])
          .where('id', '=', accountId)
          .executeTakeFirst();
        // The projected opt-outs, and STOPs already answered whose decisions are still queued.
        const optedOut = await optedOutPhones(
          trx,
          accountId,
          rows.map((row) => row.phone),
        );
        const refused: { row: OutboxRow; report: OutboxReport }[] = [];
        const allowed: OutboxRow[] = [];
        for (const row of rows) {
          const reason = refusal(row, account, optedOut.has(row.phone));
          if (reason) refused.push({ row, report: reason });
          else allowed.push(row);
        }
        const settled = await settleRefused(
          trx,
          refused.map(({ row, report }) => ({ messageId: row.message_id, report })),
          clock.now(),
        );
        return {
          events: [],
          result: {
            from: account?.phone_number ?? '',
            allowed,
            refused: refused.filter(({ row }) => settled.has(row.message_id)),
          },
        };
      },
    });
    return result;
  }

  /**
   * One send in the remote-call shape. Its claim also settles the send before (`owed`), so a backlog
   * costs one commit per message; its own outcome is returned as owed, for the next claim or the end of the batch.
   */
  async function send(
    row: OutboxRow,
    from: string,
    owed: OwedSettlement | undefined,
  ): Promise<{ claim: 'sending' | 'taken' | 'opted_out'; settledOwed: boolean; owed?: OwedSettlement }> {
    let claim: 'sending' | 'taken' | 'opted_out' = 'taken';
    let settledOwed = false;
    let outcome: OwedSettlement | undefined;
    await runRemoteCall<OutboxRow, AcceptedSms>('SMS provider', sendTimeoutMs, {
      async claim() {
        ({ claim, settledPrevious: settledOwed } = await markSending(
          db,
          row.message_id,
          clock.now(),
          leaseMs,
          owed,
        ));
        return claim === 'sending' ? row : undefined;
      },
      call: () =>
        sender.send({
          messageId: row.message_id,
          accountId: row.account_id,
          from,
          to: row.phone,
          body: row.body,
        }),
      async record(claimed, result) {
        if (result.ok) {
          const { providerMessageId, status } = result.value;
          outcome = {
            messageId: claimed.message_id,
            report: {
              type: 'message.sent',
              data: {
                message_id: claimed.message_id,
                phone: claimed.phone,
                provider_message_id: providerMessageId,
                status,
              },
            },
          };
        } else if (result.error instanceof SmsRejectedError) {
          outcome = {
            messageId: claimed.message_id,
            report: failure(claimed, 'provider_rejected', result.error.message, result.error.code),
          };
        } else {
          // Maybe accepted, maybe not (a timeout, a reset connection): never resend; reconcile() settles it.
          onError(result.error);
        }
      },
    });
    return { claim, settledOwed, owed: outcome };
  }

  /**
   * One pass over an account's claimed rows: decide them, send the allowed ones one by one, then record
   * every outcome of the pass (refused, sent, refused by the provider) with one append, in the rows'
   * order. Every outcome is settled in the outbox before it is appended (a refusal in its decision's
   * transaction, a send with the next claim or at the end), so a crash before the append loses nothing:
   * reconciliation reports what was settled and not reported.
   */
  async function sendAll(rows: readonly OutboxRow[]): Promise<void> {
    const turn = new Map(rows.map((row, index) => [row.message_id, index]));
    const byId = new Map(rows.map((row) => [row.message_id, row]));
    const outcomes: { row: OutboxRow; report: OutboxReport }[] = [];
    let owed: OwedSettlement | undefined;
    const owedSettled = () => {
      if (owed) outcomes.push({ row: byId.get(owed.messageId)!, report: owed.report });
      owed = undefined;
    };
    try {
      let todo: readonly OutboxRow[] = rows;
      let redecided: string | undefined;
      while (todo.length > 0) {
        const chunk = todo.slice(0, decisionBatch);
        let next = todo.slice(chunk.length);
        // Nothing is settled when the decision fails (the log or the read models are unavailable): the
        // leases run out and the rows are tried again, in order, so this account stops here.
        const decided = await decide(chunk[0]!.account_id, chunk);
        outcomes.push(...decided.refused);
        for (const row of decided.allowed) {
          const result = await send(row, decided.from, owed);
          if (result.settledOwed) owedSettled();
          owed = result.owed;
          if (result.claim === 'opted_out') {
            // An opt-out arrived while this pass went out: decide again from this row on (once; a row
            // still refused by the claim then waits for its lease to run out, with the rest behind it).
            next = row.message_id === redecided ? [] : todo.slice(todo.indexOf(row));
            redecided = row.message_id;
            break;
          }
        }
        todo = next;
      }
    } finally {
      // The last outcome is settled on its own; what was settled is reported even if a later send of
      // the pass failed to record.
      if (owed && (await settleSending(db, owed.messageId, clock.now(), owed.report))) owedSettled();
      outcomes.sort((a, b) => turn.get(a.row.message_id)! - turn.get(b.row.message_id)!);
      await report(outcomes);
    }
  }

  /** Wakes workers that found nothing to claim: a pass ended (its account is free again) or rows arrived. */
  let wakeWorkers: () => void = () => undefined;
  let workersWoken = new Promise<void>((resolve) => (wakeWorkers = resolve));
  const signalWorkers = () => {
    const wake = wakeWorkers;
    workersWoken = new Promise<void>((resolve) => (wakeWorkers = resolve));
    wake();
  };

  /**
   * Every worker claims for itself as soon as it is free (no worker waits for another's batch); a claim
   * never takes an account another worker holds, so each account's messages still go out in order. A
   * worker that finds nothing while others are still sending waits for one of them to finish its pass
   * (its account may have more rows) or for new rows, instead of leaving the backlog to fewer workers.
   */
  async function dispatchOnce(): Promise<number> {
    let total = 0;
    let active = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (;;) {
          const woken = workersWoken;
          const rows = await claimPending(db, clock.now(), leaseMs, decisionBatch, decisionBatch);
          if (rows.length === 0) {
            if (active === 0) return;
            await woken;
            continue;
          }
          total += rows.length;
          active += 1;
          try {
            for (const group of Map.groupBy(rows, (row) => row.account_id).values())
              await sendAll(group).catch(onError);
          } finally {
            active -= 1;
            signalWorkers();
          }
        }
      }),
    );
    return total;
  }

  let running: Promise<number> | undefined;
  let again = false;
  /** One dispatch loop at a time; a kick during a run wakes its idle workers and makes it go round once more. */
  function dispatch(): Promise<number> {
    if (running) {
      again = true;
      signalWorkers();
      return running;
    }
    running = (async () => {
      let total = 0;
      do {
        again = false;
        for (let sent = await dispatchOnce(); sent > 0; sent = await dispatchOnce()) total += sent;
      } while (again);
      return total;
    })().finally(() => (running = undefined));
    return running;
  }

  /**
   * Settles interrupted sends from what the read models learned (status callbacks), then reports what
   * was settled but never reported. Safe with several gateways: each row is settled by one of them.
   */
  async function reconcile(): Promise<number> {
    const now = clock.now();
    const settled = await settleInterrupted(db, now, graceMs, async (trx, row) => {
      const message = await trx
        .selectFrom('messages')
        .select(['sent', 'status', 'provider_message_id'])
        .where('id', '=', row.message_id)
        .executeTakeFirst();
      // The log has the outcome already (a gateway from before reports were kept).
      if (message?.sent) return { report: null };
      if (message?.provider_message_id) {
        // A status callback named this message: the provider has it.
        const status = message.status === 'received' ? 'queued' : message.status;
        return {
          report: {
            type: 'message.sent',
            data: {
              message_id: row.message_id,
              phone: row.phone,
              provider_message_id: message.provider_message_id,
              status,
            },
          },
        };
      }
      if (row.sending_at && now.getTime() - row.sending_at.getTime() > timeoutMs) {
        return {
          report: failure(
            row,
            'send_unconfirmed',
            'The send was interrupted and the provider never confirmed the message.',
          ),
        };
      }
      return undefined;
    });
    // Rare, and its callers want the settled messages readable when it returns.
    await report(
      settled.flatMap((row) => (row.report ? [{ row, report: row.report }] : [])),
      true,
    );
    const owed = await claimUnreported(db, now, graceMs, leaseMs);
    await report(
      owed.flatMap((row) => (row.report ? [{ row, report: row.report }] : [])),
      true,
    );
    return settled.length;
  }

  const consumer = kafka.consumer({
    groupId: deps.groupId,
    allowAutoTopicCreation: false,
    sessionTimeout: 10_000,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.account, fromBeginning: true });
  // A request that cannot be queued (it does not decode, or the outbox refuses it) is parked and
  // its account's later requests held behind it; every other account's requests go on.
  const parking = parkingHandler({
    db,
    codec,
    place: SMS_GATEWAY_PARKING,
    label: 'sms-gateway',
    onParked: deps.onParked,
    pollMs: deps.parkedPollMs,
    handleBatch: (topic, partition, records) =>
      db.transaction().execute(async (trx) => {
        const sorted = await sortOutRecords(trx, SMS_GATEWAY_PARKING, topic, partition, records, clock.now());
        await enqueue(
          trx,
          sorted.flatMap((record) =>
            record.event?.type === 'message.outbound_requested' ? [record.event] : [],
          ),
        );
      }),
  });
  const releasing = parking.startReleasing();

  await consumer.run({
    eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
      if (!isRunning() || isStale()) return;
      const records: PositionedEvent[] = [];
      for (const message of batch.messages) {
        // Only requests matter here; the header spares decoding everything else.
        if (!message.value || message.headers?.['event-type']?.toString() !== 'message.outbound_requested')
          continue;
        records.push(
          await decodeRecord(codec, message.offset, message.key?.toString() ?? null, message.value),
        );
      }
      parking.reportDecodeFailures(batch.topic, batch.partition, records);
      // The offsets are committed after this returns: a crash before that redelivers the batch,
      // which the outbox's primary key absorbs.
      if (records.length > 0) await parking.handle(batch.topic, batch.partition, records);
      await heartbeat();
      if (records.some((record) => record.event)) void dispatch().catch(onError);
    },
  });

  const poll = setInterval(() => {
    void dispatch().catch(onError);
    void reconcile().catch(onError);
  }, deps.pollIntervalMs ?? 1000);
  const unwatchQueue = watchQueue('sms_outbox', async () => {
    const now = clock.now();
    const { rows } = await sql<{ depth: string; lateness: number | null }>`
      select count(*)::text as depth,
             extract(epoch from ${now}::timestamptz - min(created_at))::float8 as lateness
      from sms_outbox where state = 'pending'`.execute(db);
    return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
  });

  return {
    dispatch,
    reconcile,
    async stop() {
      clearInterval(poll);
      unwatchQueue();
      releasing.stop();
      await consumer.disconnect();
      await running?.catch(() => undefined);
    },
  };
}
