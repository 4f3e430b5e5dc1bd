import type { ColumnType, Generated } from 'kysely';
import type { Int64, Json, Timestamp } from './columns';

/** Where each partition of each topic of a generation is: offsets by partition, keyed by topic name. */
export type TopicOffsets = Record<string, string[]>;

/** The log's topic generations and the copies between them (see log-generations.ts, log-migration.ts). */
export interface LogGenerationTables {
  log_generations: {
    generation: number;
    /** Partitions of each topic kind: `{ account: 32, partner: 2 }`. */
    partitions: Json<{ account: number; partner: number }>;
    state: 'migrating' | 'active' | 'draining' | 'retired';
    /** The transform the history was copied through (`identity` for generation 1). */
    transform: string;
    /** Where live writes begin on this generation, after the copied history: its consumers start here. */
    start_offsets: Json<TopicOffsets> | null;
    /** Where this generation ends: set when it stopped taking writes; its consumers drain up to here. */
    end_offsets: Json<TopicOffsets> | null;
    /** The previous generation's topics made read-only for the cutover, with the limit they had. */
    write_protected: Json<Record<string, string>> | null;
    created_at: Generated<Timestamp>;
    fenced_at: Timestamp | null;
    activated_at: Timestamp | null;
    retired_at: Timestamp | null;
  };
  /** How far the copy into a generation has read each partition of the previous one. */
  log_copy_progress: { generation: number; topic: string; partition: number; next_offset: Int64 };
  /**
   * Where copied records landed: the records of `source_offsets` (in order) went, one after another,
   * to `target_partition` from `target_first`. One row per copy request and target partition.
   */
  log_copy_chunks: {
    generation: number;
    source_topic: string;
    source_partition: number;
    source_first: Int64;
    source_last: Int64;
    target_topic: string;
    target_partition: number;
    target_first: Int64;
    source_offsets: ColumnType<string[], string[], string[]>;
  };
}
