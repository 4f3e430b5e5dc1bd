import type {
  Clock,
  CommandBus,
  Database,
  DocumentLinks,
  DocumentStore,
  NewId,
  PersonalDataKeys,
  ProjectionProgress,
  SecretBox,
} from '@leadline/runtime';
import type { NumberProvider } from '@leadline/telephony';
import type { PartnerKeyCacheOptions } from './http/partner-key-cache';
import type { FastifyServerOptions } from 'fastify';
import type { Kysely } from 'kysely';

/** What the command API is built from: every route plugin receives these, and tests build the app from them. */
export interface AppDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  numbers: NumberProvider;
  clock: Clock;
  newId: NewId;
  publicUrl: string;
  /** Where the embedded dashboard is served (`{appUrl}/embed`); `publicUrl` by default. */
  appUrl?: string | undefined;
  /** The projector's announced progress: feeds the dashboard's live updates. */
  progress?: ProjectionProgress;
  /** The built dashboard (apps/dashboard/dist by default). */
  dashboardDir?: string;
  /** Twilio's auth token: when set, every Twilio webhook must carry a valid X-Twilio-Signature. */
  twilioAuthToken?: string | undefined;
  rateLimitPerMinute: number;
  /**
   * Partner keys are cached in memory, a connection of this pool listening for their revocations.
   * Without it every request looks its key up in the database.
   */
  partnerKeyCache?: PartnerKeyCacheOptions;
  /** Failed authentications a minute per client address before a 429 (30 by default). */
  authFailuresPerMinute?: number;
  /** How many seconds one `delay_hours` unit of a sequence step lasts (3600; less for demos and tests). */
  sequenceHourSeconds?: number;
  /** Seals webhook signing secrets before they go on the log. */
  webhookSecrets: SecretBox;
  /** Signs and checks the `file_url` of collected documents. */
  documentLinks: DocumentLinks;
  /** Where document bytes are read from (the AI agent stores them). */
  documents: DocumentStore;
  /** The keys sealing each person's data on the log: an erasure destroys the person's keys. */
  personalDataKeys: PersonalDataKeys;
  /** Opens private targets for context page fetches (local testing only). */
  allowPrivateTargets?: boolean;
  /** Extra readiness checks (the event log's reachability), run by GET /health/ready. */
  readinessChecks?: (() => Promise<void>)[];
  /** How long GET /health/ready waits for its checks before it answers 503 `not_ready`; 800 ms. */
  readinessBoundMs?: number;
  logger?: FastifyServerOptions['logger'];
}
