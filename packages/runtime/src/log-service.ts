import type { EventCodec, TopicNames } from '@leadline/events';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { Clock } from './clock';
import type { CommandBus } from './command-bus';
import type { Database } from './db/schema';

/**
 * What every service that follows the log and appends its decisions to it is given (the sequencer,
 * the AI agent, the SMS gateway, the inbound decider); each adds its own settings.
 */
export interface LogServiceDeps {
  kafka: Kafka;
  /**
   * The service's own connections, for its queue, checkpoints and guards, outside the commands'
   * transactions (which `commands` opens on the bus's pool).
   */
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  commands: CommandBus;
  clock: Clock;
  /** The consumer group it follows the log in. */
  groupId: string;
}
