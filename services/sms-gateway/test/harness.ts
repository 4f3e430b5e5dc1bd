import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import {
  connectCommandServices,
  createDb,
  newUuid,
  type CommandServices,
  type Database,
  type EventToAppend,
} from '@leadline/runtime';
import { createTwilioProvider, type SmsSender } from '@leadline/telephony';
import {
  createTestEnvironment,
  fakeClock,
  startFakeTwilio,
  type FakeClock,
  type FakeTwilio,
  type TestEnvironment,
} from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startSmsGateway, type GatewayDeps, type RunningGateway } from '../src/gateway';

/**
 * The gateway's integration set-up for a test file: the real log, registry and Postgres, the projector,
 * and Twilio faked at its HTTP API (driven by the real client). Each test's gateways stop after it.
 */
export function gatewayHarness(start: Date = new Date('2026-03-02T15:00:00Z')) {
  const harness = {
    env: undefined as unknown as TestEnvironment,
    services: undefined as unknown as CommandServices,
    db: undefined as unknown as Kysely<Database>,
    twilio: undefined as unknown as FakeTwilio,
    sender: undefined as unknown as SmsSender,
    clock: fakeClock(start) as FakeClock,
  };
  let projector: RunningProjector | undefined;
  let projectorDb: Kysely<Database> | undefined;
  const running: RunningGateway[] = [];

  beforeAll(async () => {
    harness.env = await createTestEnvironment();
    harness.services = await connectCommandServices(
      { ...harness.env.config, PROJECTION_WAIT_MS: 10_000 },
      'gateway-test',
      { clock: harness.clock },
    );
    projectorDb = createDb(harness.env.config.DATABASE_URL, { maxConnections: 4 });
    projector = await startProjector({
      ...harness.services,
      db: projectorDb,
      groupId: `${harness.env.config.TOPIC_PREFIX}leadline.projector`,
      projections,
    });
    harness.db = createDb(harness.env.config.DATABASE_URL, { maxConnections: 4 });
    harness.twilio = await startFakeTwilio();
    harness.sender = createTwilioProvider({
      accountSid: harness.twilio.accountSid,
      authToken: harness.twilio.authToken,
      apiBaseUrl: harness.twilio.baseUrl,
      publicUrl: 'http://127.0.0.1:8080',
    });
  });
  afterEach(async () => {
    for (const gateway of running.splice(0)) await gateway.stop();
  });
  afterAll(async () => {
    await projector?.stop();
    await projectorDb?.destroy();
    await harness.db?.destroy();
    await harness.services?.close();
    await harness.twilio?.close();
    await harness.env?.dispose();
  });

  const context = {
    partnerId: 'partner-1',
    actor: { kind: 'system' as const, service: 'test' },
    correlationId: 'c',
  };
  const append = (accountId: string, events: EventToAppend[]) =>
    harness.services.commands.append({ stream: { topic: 'account', accountId }, context, events });

  return {
    harness,
    /** The events' context: partner-1, appended by a system test. */
    context,
    /** The gateways the running test started, stopped after it (a test that stops one takes it out). */
    running,
    append,
    /** A gateway in its own consumer group, polling rarely: tests call `dispatch` or rely on its wake-ups. */
    async gateway(overrides: Partial<GatewayDeps> = {}) {
      const started = await startSmsGateway({
        ...harness.services,
        db: harness.db,
        sender: harness.sender,
        clock: harness.clock,
        groupId: `${harness.env.config.TOPIC_PREFIX}gateway-${newUuid()}`,
        pollIntervalMs: 60_000,
        onError: () => undefined,
        ...overrides,
      });
      running.push(started);
      return started;
    },
    async account(
      accountId: string,
      phoneNumber: string,
      fields: { sending_rate?: { messages_per_second: number | null; daily_cap: number | null } } = {},
    ) {
      await append(accountId, [
        {
          type: 'account.created',
          data: {
            name: 'Gateway Co',
            company_name: 'Gateway Co',
            slug: accountId,
            phone_number: phoneNumber,
            phone_number_provisioned: true,
            forwarding_number: null,
            branding: { logo_url: null, accent_color: null },
            metadata: {},
            ...fields,
          },
        },
      ]);
    },
    request(
      phone: string,
      body: string,
      fields: { source?: 'manual' | 'sequence' | 'system'; answers?: 'opt_out' | 'opt_in' | 'help' } = {},
    ) {
      return {
        type: 'message.outbound_requested',
        data: {
          message_id: newUuid(),
          phone,
          body,
          source: fields.source ?? 'manual',
          sender_name: null,
          ...(fields.answers && { answers: fields.answers }),
          ...(fields.source === 'sequence' && {
            sequence_step: { enrollment_id: newUuid(), sequence_id: 'seq-1', step_order: 0 },
          }),
        },
      } as const;
    },
    outboxRow: (messageId: string) =>
      harness.db.selectFrom('sms_outbox').selectAll().where('message_id', '=', messageId).executeTakeFirst(),
  };
}
