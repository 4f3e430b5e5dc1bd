import { z } from 'zod';
import { keyListValue, keyValue } from './secret-box';

export class ConfigError extends Error {}

/** Parses the environment with one zod schema and names every bad variable at once. */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
  throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
}

/**
 * How long a consumer instance that stopped answering keeps its partitions: its group notices after
 * this (kafkajs' default is 30 s), then hands them to a live instance. The broker's least
 * (`group.min.session.timeout.ms`, 6 s by default), three heartbeats long. It is also how long a
 * group stalls when a broker that was its coordinator dies: kafkajs cannot fetch from a dead leader
 * until its consumer restarts, a restart joins as a new member, and the coordinator that took over
 * waits for the old member (which could not leave: its coordinator was dead) until this times out.
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 6_000;

/**
 * The bound on a write's waits for the read models, before deciding and after appending
 * (read-your-writes). It outlasts the consumers' session timeout plus a rebalance, with room for a
 * loaded machine: when a projector instance dies, its partitions are applied by nobody until then,
 * and a shorter wait would answer a write that the next read cannot see yet.
 */
export const DEFAULT_PROJECTION_WAIT_MS = 15_000;
export const projectionWaitSetting = z.coerce.number().int().positive().default(DEFAULT_PROJECTION_WAIT_MS);

/** Settings every process that touches the log and the read models needs. */
export const infrastructureConfig = z.object({
  DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/leadline'),
  KAFKA_BROKERS: z
    .string()
    .default('127.0.0.1:9092')
    .transform((value) => value.split(',').map((broker) => broker.trim())),
  SCHEMA_REGISTRY_URL: z.url().default('http://127.0.0.1:8081/apis/ccompat/v7'),
  /** Isolates an environment's topics and consumer groups on a shared broker (tests use it). */
  TOPIC_PREFIX: z.string().default(''),
  /** Bounds on every database connection; unset means `defaultDbTimeouts`, 0 turns one off. */
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(0).optional(),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).optional(),
  DATABASE_LOCK_TIMEOUT_MS: z.coerce.number().int().min(0).optional(),
  DATABASE_IDLE_TX_TIMEOUT_MS: z.coerce.number().int().min(0).optional(),
  /**
   * The most connections one process of a service opens, all its pools together (split among them
   * by `splitConnectionBudget`); unset means the service's default (README, "Connection budget").
   */
  DATABASE_MAX_CONNECTIONS: z.coerce.number().int().min(1).optional(),
  /**
   * What the deployment declares of its brokers (see `declaredDurability`): copies of each partition
   * of the log, unset 1; and how many acknowledge a write, unset 2 where there are 3 or more, else 1.
   */
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).optional(),
  KAFKA_MIN_INSYNC_REPLICAS: z.coerce.number().int().min(1).optional(),
  /** `production` refuses to start on a log less durable than declared (and on unsafe settings). */
  NODE_ENV: z.string().optional(),
  /**
   * Wrap the per-subject keys that seal personal data on the log: comma-separated, newest first; the
   * newest wraps new keys, all of them unwrap (`npm run personal-data-keys -- rewrap` moves every key
   * to the newest). Required in production; a fixed development key stands in elsewhere.
   */
  PERSONAL_DATA_KEYS: keyListValue,
  /** Keys the hash that names a data subject (a lead's phone in its account); required in production. */
  PERSONAL_DATA_HASH_KEY: keyValue.optional(),
});
export type InfrastructureConfig = z.infer<typeof infrastructureConfig>;

/**
 * The `/metrics` listener of a service without an HTTP server of its own: off unless a port is set
 * (`npm start` gives each service its own). The command API serves `/metrics` on its own port.
 */
export const metricsConfig = {
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
};
/** The connection bounds a process configured, for `createDb` / `createPool`. */
export const databaseTimeouts = (config: Partial<InfrastructureConfig>) => ({
  connectMs: config.DATABASE_CONNECT_TIMEOUT_MS,
  statementMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  lockMs: config.DATABASE_LOCK_TIMEOUT_MS,
  idleInTransactionMs: config.DATABASE_IDLE_TX_TIMEOUT_MS,
});

/** Shared by the command API and the sequencer: both compute when a sequence step is due. */
export const sequenceConfig = {
  /** How many seconds one `delay_hours` unit lasts; quiet hours stay wall-clock. */
  SEQUENCE_HOUR_SECONDS: z.coerce.number().positive().default(3600),
};
