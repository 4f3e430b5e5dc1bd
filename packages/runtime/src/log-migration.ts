import { createEventCodec, createSchemaRegistry, topicNames, type TopicKind } from '@leadline/events';
import { ensureTopics } from './kafka';
import { readGenerations, type LogGeneration } from './log-generations';
import { copyLag, cutover, FenceNotTaken, liftLeftoverFence } from './log-migration/cutover';
import { recoverUnrecorded } from './log-migration/copy-chunks';
import { startMirror } from './log-migration/mirror';
import { endsOf, offsetsOf } from './log-migration/offsets';
import type { MigrateLogDeps, MigrateLogOptions, MigrationReport } from './log-migration/options';
import { identityTransform, type LogTransform } from './log-transforms';
import { createPersonalDataSealer } from './personal-data/sealer';

/**
 * `npm run migrate-log`: moves the log to a new generation of topics (see log-generations.ts and the
 * README, "Migrating the log to a new generation"). The history is copied record by record, in order
 * per partition, into the new partition count with the producers' partitioner, through a transform;
 * where each record landed is recorded (`log_copy_chunks`), so positions on the old generation can be
 * translated. A brief write fence then lets the copy reach the old generation's final end, producers
 * switch, and each consumer moves over once it has read the old generation to that end. Every step is
 * idempotent and its progress is in Postgres: a run that is interrupted is run again.
 */

/** The migration under way, or a new one from the active generation. */
async function openMigration(
  deps: MigrateLogDeps,
  options: MigrateLogOptions,
  transform: LogTransform,
): Promise<{ source: LogGeneration; target: LogGeneration }> {
  const generations = await readGenerations(deps.db);
  const source = generations.find((generation) => generation.state === 'active')!;
  const draining = generations.find((generation) => generation.state === 'draining');
  const underway = generations.find((generation) => generation.state === 'migrating');
  const partitions = {
    account: options.partitions,
    partner: options.partnerPartitions ?? source.partitions.partner,
  };
  if (underway) {
    if (
      underway.partitions.account !== partitions.account ||
      underway.partitions.partner !== partitions.partner ||
      underway.transform !== transform.name
    ) {
      throw new Error(
        `migrate-log: a migration to generation ${underway.generation} (${underway.partitions.account} account partitions, ${underway.partitions.partner} partner partitions, transform ${underway.transform}) is under way: run it again with those settings, or --abort it`,
      );
    }
    return { source, target: underway };
  }
  if (
    partitions.account === source.partitions.account &&
    partitions.partner === source.partitions.partner &&
    !transform.apply
  ) {
    // Most likely a run repeated after it succeeded: a copy would change nothing.
    throw new Error(
      `migrate-log: generation ${source.generation} already has ${partitions.account} account and ${partitions.partner} partner partitions; nothing to do`,
    );
  }
  if (draining) {
    throw new Error(
      `migrate-log: generation ${draining.generation} is still being drained by its consumers; retire it first (npm run migrate-log -- --retire)`,
    );
  }
  const generation = Math.max(...generations.map((candidate) => candidate.generation)) + 1;
  await deps.db
    .insertInto('log_generations')
    .values({
      generation,
      partitions: JSON.stringify(partitions),
      state: 'migrating',
      transform: transform.name,
    })
    .execute();
  return {
    source,
    target: {
      generation,
      partitions,
      state: 'migrating',
      transform: transform.name,
      startOffsets: null,
      endOffsets: null,
    },
  };
}

/** Makes the new generation's topics, or checks the ones an earlier run made. */
async function prepareTopics(deps: MigrateLogDeps, target: LogGeneration) {
  const topics = topicNames(deps.prefix, target.generation);
  await ensureTopics(deps.admin, topics, {
    partitions: target.partitions,
    ...(deps.durability && { durability: deps.durability }),
  });
  for (const kind of Object.keys(topics) as TopicKind[]) {
    const count = (await offsetsOf(deps.admin, topics[kind])).length;
    if (count !== target.partitions[kind]) {
      throw new Error(
        `migrate-log: ${topics[kind]} has ${count} partitions, not the ${target.partitions[kind]} of generation ${target.generation}`,
      );
    }
  }
}

/**
 * Copies the active generation into a new one and cuts producers over to it (see the module's
 * comment). Resumes a migration that an earlier run left under way.
 */
export async function migrateLog(deps: MigrateLogDeps, options: MigrateLogOptions): Promise<MigrationReport> {
  const log = deps.log ?? (() => undefined);
  const transform = options.transform ?? identityTransform;
  const { source, target } = await openMigration(deps, options, transform);
  log(
    `generation ${source.generation} -> ${target.generation}: ${target.partitions.account} account partitions, ${target.partitions.partner} partner partitions, transform ${transform.name}`,
  );
  await liftLeftoverFence(deps, target.generation);
  await prepareTopics(deps, target);
  // The new topics' subjects (TopicRecordNameStrategy), for analysts and the transform's encoding.
  const codec = await createEventCodec(
    createSchemaRegistry(deps.schemaRegistryUrl),
    topicNames(deps.prefix, target.generation),
    createPersonalDataSealer(deps.personalDataKeys),
  );
  const alreadyCopied = await recoverUnrecorded(deps, target);
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const mirror = await startMirror(
    deps,
    source,
    target,
    codec,
    transform,
    alreadyCopied,
    options.batchRecords ?? 2_000,
  );
  try {
    const cutoverLag = BigInt(options.cutoverLagRecords ?? 1_000);
    for (let lastReport = 0; ;) {
      const lag = await copyLag(deps.admin, mirror, sourceTopics);
      if (lag <= cutoverLag) break;
      if (Date.now() - lastReport > 5_000) {
        log(`copying: ${mirror.copied()} records copied, ${lag} left`);
        lastReport = Date.now();
      }
      const ends = await endsOf(deps.admin, sourceTopics);
      // Waits for the copy to reach the end as it was a moment ago (it keeps following after that).
      await mirror.reached(ends, Date.now() + 5_000).catch((error: Error) => {
        if (/in time/.test(error.message)) return;
        throw error;
      });
    }
    log('cutting over: writes are fenced');
    for (let attempt = 1; ; attempt++) {
      try {
        const { fenceMs } = await cutover(deps, source, target, mirror, {
          fenceWaitMs: options.fenceWaitMs ?? 10_000,
          tailCopyMs: options.tailCopyMs ?? 30_000,
        });
        log(
          `generation ${target.generation} is active; writes were fenced for ${fenceMs} ms; consumers move over once each has read generation ${source.generation} to its end`,
        );
        return { from: source.generation, to: target.generation, copied: mirror.copied(), fenceMs };
      } catch (error) {
        if (!(error instanceof FenceNotTaken) || attempt >= 3) throw error;
        log(`cutover: ${error.message}; trying again`);
      }
    }
  } finally {
    await mirror.stop();
  }
}

export { ORIGIN_HEADER } from './log-migration/copy-chunks';
export type { MigrateLogDeps, MigrateLogOptions, MigrationReport } from './log-migration/options';
export { abortMigration, migrationStatus, retireGeneration } from './log-migration/retire';
