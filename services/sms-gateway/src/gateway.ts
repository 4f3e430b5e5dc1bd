import { type EventCodec, type EventOf, type NewEvent, type TopicNames } from '@leadline/events';
import {
  decodeRecord,
  isOptedOut,
  parkingHandler,
  SMS_GATEWAY_PARKING,
  sortOutRecords,
  type Clock,
  type CommandBus,
  type CommandContext,
  type Database,
  type LogConsumerDeps,
  type PositionedEvent,
} from '@leadline/runtime';
import { SmsRejectedError, type SmsSender } from '@leadline/telephony';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { claimPending, enqueue, markSending, settle, unsettled, type OutboxRow } from './outbox';

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
  batchSize?: number;
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

type Outcome = { state: 'sent'; providerMessageId: string } | { state: 'failed' } | { state: 'unknown' };

/**
 * The only code that sends SMS. It consumes `message.outbound_requested` into its outbox (one row per
 * message id, so a redelivered request is never sent twice), then sends each row through the
 * decide-and-append path of the row's account: under the account's lock and against caught-up read
 * models it refuses opted-out numbers (except the compliance replies) and deactivated accounts, marks
 * the row `sending` (committed), calls the provider and appends `message.sent` or `message.failed`.
 *
 * The one ambiguous window: the provider accepted the message but we did not record it (a crash, or an
 * error that leaves the outcome unknown, such as a timeout). Such a row stays `sending` and is never
 * sent again; `reconcile` settles it from the status callback, whose URL carries our message id:
 * once the callback is projected the row is recorded as sent; with no callback within
 * `sendingTimeoutMs` it is recorded as failed (`send_unconfirmed`).
 */
export async function startSmsGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const { kafka, db, codec, topics, commands, sender, clock } = deps;
  const concurrency = deps.concurrency ?? 4;
  const batchSize = deps.batchSize ?? 100;
  const leaseMs = deps.leaseMs ?? 60_000;
  const graceMs = deps.sendingGraceMs ?? 60_000;
  const timeoutMs = deps.sendingTimeoutMs ?? 10 * 60_000;
  const onError = deps.onError ?? ((error) => console.error('sms-gateway:', error));

  const contextOf = (row: OutboxRow): CommandContext => ({
    partnerId: row.partner_id,
    actor: { kind: 'system', service: 'sms-gateway' },
    correlationId: row.correlation_id,
    causationId: row.causation_id,
  });

  function refusal(
    row: OutboxRow,
    account: { status: string } | undefined,
    optedOut: boolean,
  ): NewEvent | undefined {
    const failed = (reason: EventOf<'message.failed'>['data']['reason'], message: string): NewEvent => ({
      type: 'message.failed',
      data: {
        message_id: row.message_id,
        phone: row.phone,
        reason,
        error_code: null,
        error_message: message,
      },
    });
    if (!account || account.status !== 'active')
      return failed('account_deactivated', 'The account is deactivated.');
    // Compliance replies (the STOP confirmation itself) are the only messages an opted-out number gets.
    if (optedOut && row.source !== 'system') return failed('lead_opted_out', 'The number opted out.');
    return undefined;
  }

  async function send(row: OutboxRow): Promise<Outcome> {
    const { result } = await commands.execute<Outcome>({
      stream: { topic: 'account', accountId: row.account_id },
      context: contextOf(row),
      lockKeys: [`account:${row.account_id}`],
      consistency: 'partition',
      async decide(trx) {
        const account = await trx
          .selectFrom('accounts')
          .select(['status', 'phone_number'])
          .where('id', '=', row.account_id)
          .executeTakeFirst();
        // The projected opt-out, or a STOP already answered whose decision is still queued.
        const refused = refusal(row, account, await isOptedOut(trx, row.account_id, row.phone));
        if (refused) return { events: [refused], result: { state: 'failed' } };
        if (!(await markSending(db, row.message_id, clock.now())))
          return { events: [], result: { state: 'unknown' } };
        try {
          const accepted = await sender.send({
            messageId: row.message_id,
            accountId: row.account_id,
            from: account!.phone_number,
            to: row.phone,
            body: row.body,
          });
          return {
            events: [
              {
                type: 'message.sent',
                data: {
                  message_id: row.message_id,
                  phone: row.phone,
                  provider_message_id: accepted.providerMessageId,
                  status: accepted.status,
                },
              },
            ],
            result: { state: 'sent', providerMessageId: accepted.providerMessageId },
          };
        } catch (error) {
          if (!(error instanceof SmsRejectedError)) {
            // Maybe accepted, maybe not: never resend; reconcile() settles it.
            onError(error);
            return { events: [], result: { state: 'unknown' } };
          }
          const failed: NewEvent = {
            type: 'message.failed',
            data: {
              message_id: row.message_id,
              phone: row.phone,
              reason: 'provider_rejected',
              error_code: error.code,
              error_message: error.message,
            },
          };
          return { events: [failed], result: { state: 'failed' } };
        }
      },
    });
    return result;
  }

  async function sendAll(rows: readonly OutboxRow[]) {
    for (const row of rows) {
      const outcome = await send(row).catch((error: unknown) => {
        // Nothing was appended (the log or the read models were unavailable); the lease runs out
        // and the row is tried again, unless it was already marked sending.
        onError(error);
        return { state: 'unknown' } as Outcome;
      });
      if (outcome.state === 'sent')
        await settle(db, row.message_id, 'sent', clock.now(), outcome.providerMessageId);
      if (outcome.state === 'failed') await settle(db, row.message_id, 'failed', clock.now());
    }
  }

  async function dispatchOnce(): Promise<number> {
    const rows = await claimPending(db, clock.now(), leaseMs, batchSize);
    const byAccount = new Map<string, OutboxRow[]>();
    for (const row of rows) byAccount.set(row.account_id, [...(byAccount.get(row.account_id) ?? []), row]);
    const queue = [...byAccount.values()];
    await Promise.all(
      Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) await sendAll(next);
      }),
    );
    return rows.length;
  }

  let running: Promise<number> | undefined;
  let again = false;
  /** One dispatch loop at a time; a kick during a run makes it go round once more. */
  function dispatch(): Promise<number> {
    if (running) {
      again = true;
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

  async function reconcile(): Promise<number> {
    const now = clock.now();
    let settled = 0;
    for (const row of await unsettled(db, now, graceMs)) {
      const message = await db
        .selectFrom('messages')
        .select(['sent', 'status', 'provider_message_id'])
        .where('id', '=', row.message_id)
        .executeTakeFirst();
      if (message?.sent) {
        await settle(db, row.message_id, 'sent', now, message.provider_message_id);
      } else if (message?.provider_message_id) {
        // A status callback named this message: the provider has it.
        const status = message.status === 'received' ? 'queued' : message.status;
        await commands.append({
          stream: { topic: 'account', accountId: row.account_id },
          context: contextOf(row),
          events: [
            {
              type: 'message.sent',
              data: {
                message_id: row.message_id,
                phone: row.phone,
                provider_message_id: message.provider_message_id,
                status,
              },
            },
          ],
        });
        await settle(db, row.message_id, 'sent', now, message.provider_message_id);
      } else if (row.sending_at && now.getTime() - row.sending_at.getTime() > timeoutMs) {
        await commands.append({
          stream: { topic: 'account', accountId: row.account_id },
          context: contextOf(row),
          events: [
            {
              type: 'message.failed',
              data: {
                message_id: row.message_id,
                phone: row.phone,
                reason: 'send_unconfirmed',
                error_code: null,
                error_message: 'The send was interrupted and the provider never confirmed the message.',
              },
            },
          ],
        });
        await settle(db, row.message_id, 'failed', now);
      } else continue;
      settled++;
    }
    return settled;
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

  return {
    dispatch,
    reconcile,
    async stop() {
      clearInterval(poll);
      releasing.stop();
      await consumer.disconnect();
      await running?.catch(() => undefined);
    },
  };
}
