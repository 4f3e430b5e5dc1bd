import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { NewEvent } from '@leadline/events';
import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import {
  connectCommandServices,
  createDb,
  newUuid,
  type CommandServices,
  type Database,
} from '@leadline/runtime';
import {
  createTestEnvironment,
  eventually,
  startFakeTwilio,
  type FakeTwilio,
  type TestEnvironment,
} from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const MESSAGES = 30;

let env: TestEnvironment;
let services: CommandServices;
let projector: RunningProjector;
let projectorDb: Kysely<Database>;
let twilio: FakeTwilio;
const children: ChildProcess[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  services = await connectCommandServices(env.config, 'gateway-crash-test');
  projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  projector = await startProjector({
    ...services,
    db: projectorDb,
    groupId: `${env.config.TOPIC_PREFIX}leadline.projector`,
    projections,
  });
  twilio = await startFakeTwilio();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await projector?.stop();
  await projectorDb?.destroy();
  await services?.close();
  await twilio?.close();
  await env?.dispose();
});

/** The gateway as `npm start` runs it: its own process, configured through the environment. */
function startGatewayProcess(): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/sms-gateway/src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: env.config.DATABASE_URL,
      KAFKA_BROKERS: env.config.KAFKA_BROKERS.join(','),
      SCHEMA_REGISTRY_URL: env.config.SCHEMA_REGISTRY_URL,
      TOPIC_PREFIX: env.config.TOPIC_PREFIX,
      TWILIO_ACCOUNT_SID: twilio.accountSid,
      TWILIO_AUTH_TOKEN: twilio.authToken,
      TWILIO_API_BASE_URL: twilio.baseUrl,
      PUBLIC_URL: 'http://127.0.0.1:8080',
      SMS_SEND_TIMEOUT_SECONDS: '2',
      // The crash, not the pace, is under test: the number may carry the batch at once.
      SMS_MESSAGES_PER_SECOND: '100',
      NODE_ENV: 'test',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.resume();
  children.push(child);
  return child;
}

const context = {
  partnerId: 'partner-1',
  actor: { kind: 'system' as const, service: 'test' },
  correlationId: 'c',
};
const append = (accountId: string, events: NewEvent[]) =>
  services.commands.append({ stream: { topic: 'account', accountId }, context, events });

/** Our message id, from the status callback URL Twilio was given with the message. */
const messageIdOf = (statusCallback: string | undefined) =>
  new URL(statusCallback ?? 'http://x/').searchParams.get('message_id');

describe('the SMS gateway process', () => {
  it('killed with kill -9 in the middle of a batch and restarted, sends no SMS twice and settles every message', async () => {
    await append('acc-kill', [
      {
        type: 'account.created',
        data: {
          name: 'Kill Co',
          company_name: 'Kill Co',
          slug: 'acc-kill',
          phone_number: '+15125551101',
          phone_number_provisioned: true,
          forwarding_number: null,
          branding: { logo_url: null, accent_color: null },
          metadata: {},
        },
      },
    ]);
    const ids = Array.from({ length: MESSAGES }, () => newUuid());
    await append(
      'acc-kill',
      ids.map((id, i) => ({
        type: 'message.outbound_requested',
        data: {
          message_id: id,
          phone: `+1512556${String(i).padStart(4, '0')}`,
          body: `Message ${i}`,
          source: 'manual',
          sender_name: null,
        },
      })),
    );
    // A slow provider, so the kill lands while a send is on the wire.
    twilio.messageDelayMs = 150;

    const first = startGatewayProcess();
    await eventually(async () => (twilio.messages.length >= 5 ? true : undefined), { timeoutMs: 60_000 });
    first.kill('SIGKILL');
    await once(first, 'exit');
    const beforeRestart = twilio.messages.length;
    expect(beforeRestart).toBeLessThan(MESSAGES);

    startGatewayProcess();
    // Twilio calls back for every message it accepted, the one whose answer the kill cut off included.
    const calledBack = new Set<string>();
    const outbox = () =>
      services.db
        .selectFrom('sms_outbox')
        .select(['message_id', 'state'])
        .where('account_id', '=', 'acc-kill')
        .execute();
    await eventually(
      async () => {
        for (const message of twilio.messages) {
          if (calledBack.has(message.sid)) continue;
          calledBack.add(message.sid);
          await append('acc-kill', [
            {
              type: 'message.status_updated',
              data: {
                message_id: messageIdOf(message.statusCallback)!,
                phone: message.to,
                provider_message_id: message.sid,
                status: 'delivered',
                provider_status: 'delivered',
                error_code: null,
              },
            },
          ]);
        }
        const rows = await outbox();
        return rows.length === MESSAGES && rows.every((row) => row.state === 'sent') ? rows : undefined;
      },
      { timeoutMs: 90_000 },
    );

    const sentIds = twilio.messages.map((message) => messageIdOf(message.statusCallback));
    expect(sentIds).toHaveLength(MESSAGES);
    expect(new Set(sentIds)).toEqual(new Set(ids));
    expect(new Set(twilio.messages.map((message) => message.body)).size).toBe(MESSAGES);
    // Every message is recorded as sent where the API reads it.
    const recorded = await eventually(async () => {
      const rows = await services.db
        .selectFrom('messages')
        .select(['id', 'sent'])
        .where('id', 'in', ids)
        .where('sent', '=', true)
        .execute();
      return rows.length === MESSAGES ? rows : undefined;
    });
    expect(recorded).toHaveLength(MESSAGES);
  });
});
