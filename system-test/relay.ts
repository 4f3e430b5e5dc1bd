import type { DomainEvent, EventData } from '@leadline/events';
import {
  createDb,
  createDocumentLinks,
  createSecretBox,
  DEVELOPMENT_DOCUMENT_LINK_KEY,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  type CommandBus,
  type Database,
  type SecretBox,
} from '@leadline/runtime';
import { fakeClock, newLeadData, type FakeClock } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { partnerClient, type PartnerClient } from './client';
import { startSystem, type TestSystem } from './system';
import { hashApiKey } from '../services/command-api/src/partners/api-keys';
import { createDispatcher, type Dispatcher } from '../services/webhook-relay/src/dispatcher';
import { createWebhookClient, type WebhookClient } from '../services/webhook-relay/src/http-client';
import { startRelay, type RunningRelay } from '../services/webhook-relay/src/relay';
import { DEFAULT_RETRY_DELAYS_SECONDS } from '../services/webhook-relay/src/schedule';
import { startReceiver, type Receiver } from '@leadline/test-kit';

/** Test timeout of one attempt: a hanging receiver fails fast; no assertion depends on it. */
export const TEST_TIMEOUT_MS = 1500;
/** How long a claimed delivery stays leased on the harness's (fake) clock. */
export const TEST_LEASE_MS = 60_000;

export interface RelayInstance {
  relay: RunningRelay | undefined;
  dispatcher: Dispatcher;
  client: WebhookClient;
  db: Kysely<Database>;
  applicationName: string;
  stop(): Promise<void>;
}

export interface Partner {
  id: string;
  key: string;
  api: PartnerClient;
  accountId: string;
}

/**
 * The whole write path in process (command API, projector) on this file's own database and topics,
 * an HTTPS receiver on loopback, and relays built like services/webhook-relay's main, on a fake clock.
 * Tests drain the dispatcher themselves instead of letting it poll.
 */
export async function startHarness(systemOptions: Parameters<typeof startSystem>[0] = {}) {
  const system: TestSystem = await startSystem(systemOptions);
  const receiver: Receiver = await startReceiver();
  const clock: FakeClock = fakeClock(new Date('2030-01-07T09:00:00.000Z'));
  const instances: RelayInstance[] = [];
  let count = 0;

  async function startRelayInstance(
    options: {
      /** False for a relay that only dispatches: joining the consumer group costs a rebalance. */
      consume?: boolean;
      allowPrivateTargets?: boolean;
      retryDelaysSeconds?: readonly number[];
      concurrency?: number;
      endpointConcurrency?: number;
      /** The attempt timeout (TEST_TIMEOUT_MS otherwise). */
      timeoutMs?: number;
      /** Where webhook.disabled and delivery_failed go (the system's command bus otherwise). */
      commands?: Pick<CommandBus, 'append'>;
      /** The relay's keys; the development key otherwise, as the command API in the harness uses. */
      secrets?: SecretBox;
    } = {},
  ): Promise<RelayInstance> {
    const applicationName = `relay-${++count}`;
    const url = new URL(system.env.config.DATABASE_URL);
    url.searchParams.set('application_name', applicationName);
    const db = createDb(url.toString(), { maxConnections: (options.concurrency ?? 4) + 2 });
    const client = createWebhookClient({
      timeoutMs: options.timeoutMs ?? TEST_TIMEOUT_MS,
      allowPrivateTargets: options.allowPrivateTargets ?? true,
      ca: receiver.ca,
    });
    const dispatcher = createDispatcher({
      db,
      clock,
      client,
      secrets: options.secrets ?? createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
      retryDelaysSeconds: options.retryDelaysSeconds ?? DEFAULT_RETRY_DELAYS_SECONDS,
      concurrency: options.concurrency ?? 4,
      ...(options.endpointConcurrency !== undefined && { endpointConcurrency: options.endpointConcurrency }),
      leaseMs: TEST_LEASE_MS,
      attemptTimeoutMs: options.timeoutMs ?? TEST_TIMEOUT_MS,
      commands: options.commands ?? system.services.commands,
    });
    const relay =
      options.consume === false
        ? undefined
        : await startRelay({
            ...system.services,
            db,
            groupId: `${system.env.config.TOPIC_PREFIX}leadline.webhook-relay`,
            clock,
            newId: newUuid,
            documentLinks: createDocumentLinks({
              publicUrl: system.publicUrl,
              keys: [DEVELOPMENT_DOCUMENT_LINK_KEY],
              clock,
            }),
          });
    const instance: RelayInstance = {
      relay,
      dispatcher,
      client,
      db,
      applicationName,
      async stop() {
        instances.splice(instances.indexOf(instance), 1);
        await relay?.stop();
        await dispatcher.stop();
        client.close();
        await db.destroy();
      },
    };
    instances.push(instance);
    return instance;
  }

  async function createPartner(name: string): Promise<Partner> {
    const key = await system.createPartner(name);
    const { partner_id } = await system.services.db
      .selectFrom('partner_api_keys')
      .select('partner_id')
      .where('key_hash', '=', hashApiKey(key))
      .executeTakeFirstOrThrow();
    const api = partnerClient(system.app, key);
    const account = await api.post('/accounts', { name: `${name} customer`, consent_required: false });
    return { id: partner_id, key, api, accountId: account.body.id };
  }

  /** Appends domain events of one account as the lead feature will: one append, one batch. */
  async function append(partner: Partner, events: { type: DomainEvent['type']; data: unknown }[]) {
    return system.services.commands.append({
      stream: { topic: 'account', accountId: partner.accountId },
      context: {
        partnerId: partner.id,
        actor: { kind: 'system', service: 'test' },
        correlationId: newUuid(),
      },
      events: events as never,
    });
  }

  return {
    system,
    receiver,
    clock,
    startRelayInstance,
    createPartner,
    append,
    async close() {
      for (const instance of [...instances]) await instance.stop();
      await receiver.close();
      await system.close();
    },
  };
}

export type Harness = Awaited<ReturnType<typeof startHarness>>;

export function leadCreated(
  phone: string,
  fields: Partial<EventData<'lead.created'>> = {},
): { type: 'lead.created'; data: EventData<'lead.created'> } {
  return {
    type: 'lead.created',
    data: newLeadData({ lead_id: newUuid(), phone, ...fields }),
  };
}

export function statusChanged(
  phone: string,
  previous: EventData<'lead.status_changed'>['previous_status'],
  next: EventData<'lead.status_changed'>['new_status'],
): { type: 'lead.status_changed'; data: EventData<'lead.status_changed'> } {
  return {
    type: 'lead.status_changed',
    data: { lead_id: newUuid(), phone, previous_status: previous, new_status: next },
  };
}
