import {
  connectInfrastructure,
  createCommandBus,
  createEventProducer,
  createProjectionProgress,
  newUuid,
  systemClock,
  type CommandBus,
  type Infrastructure,
  type InfrastructureConfig,
} from '@leadline/runtime';
import type { Pool } from 'pg';
import pg from 'pg';

export interface CommandServices extends Infrastructure {
  commands: CommandBus;
}

/** Connects what a command-issuing process needs: infrastructure, the producer and the command bus. */
export async function connectCommandServices(
  config: InfrastructureConfig & { PROJECTION_WAIT_MS?: number },
  clientId: string,
): Promise<CommandServices> {
  const infrastructure = await connectInfrastructure(config, clientId);
  const producer = createEventProducer(infrastructure.kafka);
  await producer.connect();
  const listenerPool: Pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: 2 });
  const progress = await createProjectionProgress(listenerPool);
  const commands = createCommandBus({
    ...infrastructure,
    producer,
    progress,
    clock: systemClock,
    newId: newUuid,
    projectionWaitMs: config.PROJECTION_WAIT_MS ?? 5000,
  });
  return {
    ...infrastructure,
    commands,
    async close() {
      await progress.close();
      await listenerPool.end();
      await producer.disconnect();
      await infrastructure.close();
    },
  };
}
