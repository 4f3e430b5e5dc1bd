import { parseTopicName, topicNames, type TopicKind, type TopicNames } from '@leadline/events';
import { unavailable } from '@leadline/domain';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, TopicOffsets } from './db/schema';
import { forgetTopics } from './kafka';

/**
 * The log's topic generations. The log moves to a new generation of topics (more partitions, or its
 * history rewritten through a transform) with `npm run migrate-log`; `log_generations` in Postgres
 * says which generation producers write to and where each one starts and ends, and every producer
 * and consumer follows it without a restart. See the README, "Migrating the log to a new generation".
 */

export type GenerationState = 'migrating' | 'active' | 'draining' | 'retired';

export interface LogGeneration {
  generation: number;
  partitions: Readonly<Record<TopicKind, number>>;
  state: GenerationState;
  transform: string;
  /** Where live writes begin, after the copied history (set when the generation became active). */
  startOffsets: TopicOffsets | null;
  /** Where the generation ends (set when it stopped taking writes). */
  endOffsets: TopicOffsets | null;
}

type Reader = Kysely<Database> | Transaction<Database>;

const toGeneration = (row: {
  generation: number;
  partitions: { account: number; partner: number };
  state: GenerationState;
  transform: string;
  start_offsets: TopicOffsets | null;
  end_offsets: TopicOffsets | null;
}): LogGeneration => ({
  generation: row.generation,
  partitions: row.partitions,
  state: row.state,
  transform: row.transform,
  startOffsets: row.start_offsets,
  endOffsets: row.end_offsets,
});

/** What `enter_write_fence` answers: whether the fence is held, and the active generation. */
type FenceRow = { open: boolean } & Parameters<typeof toGeneration>[0];

/** Every generation, oldest first. */
export async function readGenerations(db: Reader): Promise<LogGeneration[]> {
  const rows = await db
    .selectFrom('log_generations')
    .select(['generation', 'partitions', 'state', 'transform', 'start_offsets', 'end_offsets'])
    .orderBy('generation')
    .execute();
  return rows.map(toGeneration);
}

/** The generation producers write to. */
export async function activeGeneration(db: Reader): Promise<LogGeneration> {
  const row = await db
    .selectFrom('log_generations')
    .select(['generation', 'partitions', 'state', 'transform', 'start_offsets', 'end_offsets'])
    .where('state', '=', 'active')
    .executeTakeFirst();
  if (!row) throw new Error('log_generations has no active generation');
  return toGeneration(row);
}

/** The consumer group reading a generation: generation 1 keeps the group's own name. */
export const generationGroupId = (groupId: string, generation: number) =>
  generation === 1 ? groupId : `${groupId}.g${generation}`;

/** An offset of a generation's partition from its recorded offsets; 0 where none is recorded. */
export const offsetIn = (offsets: TopicOffsets | null, topic: string, partition: number): bigint =>
  BigInt(offsets?.[topic]?.[partition] ?? '0');

/**
 * Which environment and topic kinds a list of the log's topics names (all of one prefix and one
 * generation), or undefined for topics that are not the log's (a test's own topic): those are read
 * as they are, without following generations.
 */
export function logLayoutOf(topics: readonly string[]): { prefix: string; kinds: TopicKind[] } | undefined {
  const parsed = topics.map(parseTopicName);
  const first = parsed[0];
  if (!first || parsed.some((topic) => !topic || topic.prefix !== first.prefix)) return undefined;
  if (parsed.some((topic) => topic!.generation !== first.generation)) return undefined;
  return { prefix: first.prefix, kinds: parsed.map((topic) => topic!.kind) };
}

/** The topics of `kinds` in a generation. */
export const topicsOfKinds = (prefix: string, generation: number, kinds: readonly TopicKind[]) =>
  kinds.map((kind) => topicNames(prefix, generation)[kind]);

/**
 * The write fence. Every append holds it shared, for its whole transaction; the cutover of a
 * migration takes it exclusively, which waits for the appends in flight and refuses new ones, so the
 * end of the old generation read under it is final for every append that was acknowledged. The same
 * name is written into `enter_write_fence` (migration 0019): a new name needs a new migration.
 */
export const LOG_FENCE_LOCK = sql`hashtextextended('leadline.log-fence', 0)`;

const LOCK_NOT_AVAILABLE = '55P03';

const migrating = () =>
  unavailable(
    'log_migrating',
    'The event log is moving to a new generation of topics; nothing was written, retry shortly.',
  );

/**
 * Enters the write fence for the rest of `trx` and returns the generation to append to. A command
 * (`waitMs` 0) is refused at once while a cutover holds the fence: 503 `log_migrating`. Plain facts
 * wait for it up to `waitMs` (a webhook that Twilio does not retry is better answered late than not
 * at all), then are refused the same way.
 *
 * A command gives its stream's `locks` (lock keys, in the order they must be taken): they are taken
 * first, so the fence is tried only once they are all held (a cutover waits for the commands already
 * deciding, not for those queued behind a lock). Locks, fence and generation are one round trip: the
 * `enter_write_fence` function (migration 0019) reads the generation in a query of its own, after the
 * fence is held, so its snapshot is taken after any cutover that ended before and no append goes to a
 * generation that has stopped taking writes.
 */
export async function enterWriteFence(
  trx: Transaction<Database>,
  { waitMs, locks = [] }: { waitMs: number; locks?: readonly string[] },
): Promise<LogGeneration> {
  // Facts wait out a cutover rather than be refused, and take no stream locks.
  if (waitMs > 0 && locks.length > 0)
    throw new Error('A write fence entered with a wait takes no stream locks');
  const { rows } = await sql<FenceRow>`
    select * from enter_write_fence(${[...locks]}::text[], ${Math.ceil(waitMs)}::integer)`
    .execute(trx)
    .catch((error: unknown) => {
      // Past a fact's wait for the fence. A stream lock not granted in time is the database's (503
      // `database_busy`), and only commands take those.
      if (waitMs > 0 && (error as { code?: string }).code === LOCK_NOT_AVAILABLE) throw migrating();
      throw error;
    });
  const row = rows[0];
  if (!row) throw new Error('log_generations has no active generation');
  if (!row.open) throw migrating();
  return toGeneration(row);
}

/** How often processes look at the generations; a cutover's commands see it at once anyway. */
const FOLLOW_MS = 2_000;

/**
 * The active generation's topic names, kept current: `topics` answers with the names of whichever
 * generation is active as of the last look (every `FOLLOW_MS`), so code that holds the object (a
 * readiness check, a wait for the projector) follows a migration without a restart. Appends and
 * consumers do not rely on it: they read the generation themselves (see `enterWriteFence` and
 * `startLogConsumer`). A retired generation's topics are forgotten by the process's Kafka clients,
 * which would otherwise fail on them once they are deleted (see `forgetTopics`).
 */
export function followActiveTopics(db: Kysely<Database>, prefix: string, initial: LogGeneration) {
  let current = topicNames(prefix, initial.generation);
  const topics: TopicNames = {
    get account() {
      return current.account;
    },
    get partner() {
      return current.partner;
    },
  };
  const timer = setInterval(() => {
    readGenerations(db).then(
      (generations) => {
        const active = generations.find((generation) => generation.state === 'active');
        if (active) current = topicNames(prefix, active.generation);
        for (const generation of generations) {
          if (generation.state === 'retired')
            forgetTopics(Object.values(topicNames(prefix, generation.generation)));
        }
      },
      () => undefined,
    );
  }, FOLLOW_MS);
  // A process with nothing else to do ends; following never keeps it alive.
  timer.unref();
  return { topics, stop: () => clearInterval(timer) };
}
