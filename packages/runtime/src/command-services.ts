import { newUuid, systemClock, type Clock } from './clock';
import { createCommandBus, type CommandBus } from './command-bus';
import { databaseTimeouts, DEFAULT_PROJECTION_WAIT_MS, type InfrastructureConfig } from './config';
import { splitConnectionBudget } from './db/connection-budget';
import { createDb, createPool } from './db/database';
import { connectInfrastructure, type Infrastructure } from './infrastructure';
import { createProjectionProgress, type ProjectionProgress } from './projection-progress';

export interface CommandServices extends Infrastructure {
  commands: CommandBus;
  /** The projector's progress, as it announces it (live updates follow the read models with it). */
  progress: ProjectionProgress;
}

/** Connects what a command-issuing process needs: infrastructure and the command bus. */
export async function connectCommandServices(
  config: InfrastructureConfig & { PROJECTION_WAIT_MS?: number; EVENT_LOG_TIMEOUT_MS?: number },
  clientId: string,
  options: {
    clock?: Clock;
    /** Commands deciding at once; each holds a connection from its lock to its append. 10 by default. */
    commandConnections?: number;
    /** The process's own pool (`db`): reads, or a worker's queue. 10 by default. */
    readConnections?: number;
    /** Listening for the projector's progress, and its catch-up reads. 2 by default. */
    listeningConnections?: number;
    /** Lowers the most one command may append (tests reach the limit with a small request). */
    appendMaxBytes?: number;
  } = {},
): Promise<CommandServices> {
  const infrastructure = await connectInfrastructure(config, clientId, {
    maxConnections: options.readConnections ?? 10,
  });
  const timeouts = databaseTimeouts(config);
  const listenerPool = createPool(config.DATABASE_URL, {
    maxConnections: options.listeningConnections ?? 2,
    timeouts,
  });
  const progress = await createProjectionProgress(listenerPool);
  // Commands hold a connection while they wait for their stream's lock; their own pool keeps a burst
  // of writes to one account from starving the reads and the projector.
  const commandDb = createDb(config.DATABASE_URL, {
    maxConnections: options.commandConnections ?? 10,
    timeouts,
  });
  const commands = createCommandBus({
    ...infrastructure,
    db: commandDb,
    progress,
    clock: options.clock ?? systemClock,
    newId: newUuid,
    projectionWaitMs: config.PROJECTION_WAIT_MS ?? DEFAULT_PROJECTION_WAIT_MS,
    eventLogTimeoutMs: config.EVENT_LOG_TIMEOUT_MS ?? 3000,
    ...(options.appendMaxBytes !== undefined && { appendMaxBytes: options.appendMaxBytes }),
  });
  return {
    ...infrastructure,
    commands,
    progress,
    async close() {
      await progress.close();
      await listenerPool.end();
      await commands.close();
      await commandDb.destroy();
      await infrastructure.close();
    },
  };
}

/**
 * A background worker's command services within its connection budget (README, "Connection budget"):
 * two listening connections, the rest shared equally by its commands and its own work (`db`: its
 * queue, claims or checkpoints). Each worker holds at most one connection of each pool at a time, so
 * a pool smaller than its concurrency queues the work rather than deadlocking.
 */
export function connectWorkerServices(
  config: Parameters<typeof connectCommandServices>[0] & { DATABASE_MAX_CONNECTIONS?: number | undefined },
  service: string,
  defaultBudget: number,
): Promise<CommandServices> {
  const connections = splitConnectionBudget(service, config.DATABASE_MAX_CONNECTIONS ?? defaultBudget, {
    listening: { fixed: 2 },
    commands: { share: 1 },
    work: { share: 1 },
  });
  return connectCommandServices(config, `leadline-${service}`, {
    listeningConnections: connections.listening,
    commandConnections: connections.commands,
    readConnections: connections.work,
  });
}
