import type { Admin, Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema';
import type { LogDurability } from '../log-durability';
import type { LogTransform } from '../log-transforms';
import type { PersonalDataKeys } from '../personal-data/keys';

export interface MigrateLogDeps {
  /** With no statement timeout: the fence waits on a lock for as long as `fenceWaitMs`. */
  db: Kysely<Database>;
  kafka: Kafka;
  admin: Admin;
  schemaRegistryUrl: string;
  /**
   * Open and seal personal data when a transform rewrites records (a transform sees values in clear,
   * and what it writes is sealed again). Every process has them (`connectInfrastructure`).
   */
  personalDataKeys: PersonalDataKeys;
  /** The environment's topic prefix (`TOPIC_PREFIX`). */
  prefix: string;
  /** Replication and `min.insync.replicas` of the new generation's topics; 1 and 1 by default. */
  durability?: LogDurability;
  log?: (message: string) => void;
}

export interface MigrateLogOptions {
  /** Partitions of the new generation's account topic. */
  partitions: number;
  /** Partitions of its partner topic; as many as now by default. */
  partnerPartitions?: number;
  transform?: LogTransform;
  /** The copy starts the cutover once fewer records than this are left to copy (1,000 by default). */
  cutoverLagRecords?: number;
  /**
   * Bound on waiting, with the fence up, for the appends in flight to finish (10 s by default): past
   * it the fence comes down, nothing changed, and the cutover is tried again (three times in all).
   */
  fenceWaitMs?: number;
  /** Bound on copying the rest of the old generation with the fence up (30 s by default). */
  tailCopyMs?: number;
  /** Records per copy request (2,000 by default). */
  batchRecords?: number;
}

export interface MigrationReport {
  from: number;
  to: number;
  /** Records copied by this run. */
  copied: number;
  /** How long writes were fenced at the cutover, waiting for the appends in flight included. */
  fenceMs: number;
}
