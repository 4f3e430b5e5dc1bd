import type { DomainEvent, EventOf } from '@leadline/events';
import {
  advanceCheckpoint,
  freshRecords,
  reportFailure,
  startLogConsumer,
  type LogServiceDeps,
  type NewId,
  type PositionedEvent,
  type RunningConsumer,
} from '@leadline/runtime';
import { sql } from 'kysely';
import { decideInboundBatch } from './decide-batch';
import { forgetDecidedOptOutGuards } from './erasure';

export interface InboundDeciderDeps extends LogServiceDeps {
  newId: NewId;
  /** Accounts decided at once (each account's inbound SMS in order); 8 by default. */
  concurrency?: number;
  /** How often answered opt-outs whose decision is now in the read models are looked for; 1 s by default. */
  guardSweepMs?: number;
  onCrash?: (error: Error, willRestart: boolean) => void;
}

export interface RunningInboundDecider {
  /** Removes the opt-out guards the read models have made redundant (tests call it rather than wait). */
  sweepGuards(): Promise<void>;
  stop(): Promise<void>;
}

/** The events the decider decides: the raw inbound SMS the Twilio webhook appended. */
const isInboundFact = (event: DomainEvent): event is EventOf<'message.inbound_received'> =>
  event.type === 'message.inbound_received';
const isErasure = (event: DomainEvent | undefined): event is EventOf<'lead.erased'> =>
  event?.type === 'lead.erased';

/**
 * The inbound decider: consumes the raw inbound facts (`message.inbound_received`) the Twilio webhook
 * appended and decides them, in log order per account, under the account's lock: all of one account's
 * facts in a batch in one command (see `decideInboundBatch`). Deciding is idempotent (a MessageSid is
 * stored once), so the checkpoint is moved after the decisions, in its own transaction; a record that
 * cannot be decided is parked and holds back only its account's later records.
 */
export async function startInboundDecider(deps: InboundDeciderDeps): Promise<RunningInboundDecider> {
  const { db, clock } = deps;
  const checkpoints = 'inbound_decider_checkpoints';
  const concurrency = deps.concurrency ?? 8;
  // Partitions are handled at once and so are the accounts of a batch; the bound on decisions in
  // flight holds over all of them.
  const slots = limiter(concurrency);

  async function handleBatch(topic: string, partition: number, records: PositionedEvent[]) {
    const last = records.at(-1);
    if (!last) return;
    // Parks what failed and holds back what waits behind it; the checkpoint's lock ends with it.
    const fresh = await db
      .transaction()
      .execute((trx) => freshRecords(trx, checkpoints, topic, partition, records, clock.now()));
    // Each account's facts in log order; several accounts at once, since every decision waits on
    // Kafka and the projector and one account at a time would fall behind a busy partition.
    const byAccount = new Map<string, EventOf<'message.inbound_received'>[]>();
    for (const record of fresh) {
      const fact = record.event;
      if (!fact || !isInboundFact(fact)) continue;
      const facts = byAccount.get(fact.account_id) ?? [];
      facts.push(fact);
      byAccount.set(fact.account_id, facts);
    }
    // One command per account (see `decideInboundBatch`): its facts in log order share one lock, one
    // wait for the read models and one append. Accounts run at once, within the bound.
    const decided: string[] = [];
    const workers = await Promise.allSettled(
      [...byAccount.values()].map((facts) =>
        slots(async () => {
          await decideInboundBatch(deps, facts);
          decided.push(...facts.map((fact) => fact.data.provider_message_id));
        }),
      ),
    );
    // Every worker has stopped before a failure is reported, so a retry never races a decision.
    const failure = workers.find((worker) => worker.status === 'rejected');
    if (failure) throw failure.reason;
    await db.transaction().execute(async (trx) => {
      if (decided.length > 0) {
        await trx
          .updateTable('inbound_receipts')
          .set({ decided_at: clock.now() })
          .where('message_sid', 'in', decided)
          .where('decided_at', 'is', null)
          .execute();
      }
      // After the batch's decisions are marked, so an opt-out decided just before its lead's erasure
      // counts as decided.
      for (const record of fresh)
        if (isErasure(record.event))
          await forgetDecidedOptOutGuards(trx, deps.personalDataKeys, record.event);
      await advanceCheckpoint(trx, checkpoints, topic, partition, last.offset, clock.now());
    });
    if (decided.length > 0) await sweepGuards();
  }

  /**
   * A guard stands for an answered opt-out until the read models say what the log says: its STOP is
   * stored (its decision, opt-out included, was projected in the same transaction as the message), or
   * another account owns its MessageSid (nothing will be decided for this one).
   */
  async function sweepGuards() {
    await sql`
      delete from opt_out_guards g
      where exists (
          select 1 from messages m
          where m.provider_message_id = g.message_sid and m.account_id = g.account_id)
        or exists (
          select 1 from inbound_receipts r
          where r.message_sid = g.message_sid and r.account_id <> g.account_id)`.execute(db);
  }

  const consumer: RunningConsumer = await startLogConsumer({
    kafka: deps.kafka,
    db,
    codec: deps.codec,
    groupId: deps.groupId,
    topics: [deps.topics.account],
    checkpoints,
    handleBatch,
    // Only those are decoded (the header names the type): opening every other record's personal data
    // would be work for nothing.
    decodes: (type) => type === 'message.inbound_received' || type === 'lead.erased',
    actsOn: (event) => isInboundFact(event) || isErasure(event),
    partitionsConsumedConcurrently: concurrency,
    onCrash: deps.onCrash,
  });
  // The projector may apply a decision after the decider's bounded wait for it: sweep now and then.
  const reportSweepFailure = reportFailure('inbound-decider: sweeping guards');
  const sweeper = setInterval(() => void sweepGuards().catch(reportSweepFailure), deps.guardSweepMs ?? 1000);

  return {
    sweepGuards,
    async stop() {
      clearInterval(sweeper);
      await consumer.stop();
    },
  };
}

/** At most `size` calls in flight; the others wait their turn, first come first served. */
function limiter(size: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(call: () => Promise<T>): Promise<T> => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}
