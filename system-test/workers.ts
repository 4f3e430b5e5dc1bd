import { startInboundDecider } from '@leadline/inbound-decider';
import { newUuid, type Clock, type CommandBus, type Database } from '@leadline/runtime';
import { startSequencer } from '@leadline/sequencer';
import { eventually, type TestEnvironment } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import type { CommandServices } from '../services/command-api/src/services';

/** What of a test system (system.ts) a hand-started worker needs. */
interface SystemParts {
  env: TestEnvironment;
  services: CommandServices;
}

/**
 * The inbound decider of a test system, on `db` (its own pool): the system starts one unless told not
 * to; a test that stops and starts it around what it checks (an opt-out answered before it is decided,
 * a cutover) starts it with this.
 */
export function startTestInboundDecider(
  { env, services }: SystemParts,
  { db, clock = { now: () => new Date() } }: { db: Kysely<Database>; clock?: Clock },
) {
  return startInboundDecider({
    ...services,
    db,
    clock,
    newId: newUuid,
    groupId: `${env.config.TOPIC_PREFIX}leadline.inbound-decider`,
    guardSweepMs: 200,
  });
}

/**
 * A sequencer for a test system, on `db` (its claims' own pool). The test drives it with `tick()`
 * unless it gives a poll interval; an hour of a step's delay is an hour, as in production.
 */
export function startTestSequencer(
  { env, services }: SystemParts,
  options: {
    db: Kysely<Database>;
    clock: Clock;
    commands?: CommandBus;
    leaseMs?: number;
    groupId?: string;
    pollIntervalMs?: number;
  },
) {
  return startSequencer({
    ...services,
    commands: options.commands ?? services.commands,
    db: options.db,
    clock: options.clock,
    newId: newUuid,
    groupId: options.groupId ?? `${env.config.TOPIC_PREFIX}leadline.sequencer`,
    hourSeconds: 3600,
    leaseMs: options.leaseMs ?? 60_000,
    pollIntervalMs: options.pollIntervalMs ?? 3_600_000,
    onError: () => undefined,
  });
}

/**
 * Waits until the gateway has settled (sent or refused) every message queued for `phone` and has put
 * what became of each on the log (a send is settled, then appended, after its call).
 */
export async function outboxSettled({ services }: Pick<SystemParts, 'services'>, phone: string) {
  // The rows still open, kept so that a timeout names them.
  let open: unknown[] = [];
  try {
    await eventually(
      async () => {
        open = await services.db
          .selectFrom('sms_outbox')
          .select(['message_id', 'state', 'held_until', 'reported_at'])
          .where('phone', '=', phone)
          .where((row) =>
            row.or([
              row('state', 'not in', ['sent', 'failed']),
              row.and([row('report', 'is not', null), row('reported_at', 'is', null)]),
            ]),
          )
          .execute();
        return open.length === 0 ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
  } catch (error) {
    throw new Error(`The gateway left messages unsettled or unreported: ${JSON.stringify(open)}`, {
      cause: error,
    });
  }
}
