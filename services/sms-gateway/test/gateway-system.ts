import { newUuid, type CommandServices, type Database } from '@leadline/runtime';
import type { SmsSender } from '@leadline/telephony';
import { eventually, type FakeClock, type FakeTwilio } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { beforeAll } from 'vitest';
import { gatewayHarness } from './harness';

/**
 * What the gateway's own test files share: the harness's system, under the names those tests use,
 * and their helpers to request a message and to read what became of it.
 */
export let services: CommandServices;
export let gatewayDb: Kysely<Database>;
export let twilio: FakeTwilio;
export let sender: SmsSender;
export let clock: FakeClock;
export let context: ReturnType<typeof gatewayHarness>['context'];
export let running: ReturnType<typeof gatewayHarness>['running'];
let kit: ReturnType<typeof gatewayHarness>;

/** Sets up (before the file's tests) the gateway harness and binds the names above to it. */
export function useGatewaySystem() {
  kit = gatewayHarness();
  ({ context, running } = kit);
  clock = kit.harness.clock;
  beforeAll(() => {
    ({ services, db: gatewayDb, twilio, sender } = kit.harness);
  });
}

/** A gateway in its own consumer group (a fresh group reads the whole log from offset 0). */
export const gateway: ReturnType<typeof gatewayHarness>['gateway'] = (overrides) => kit.gateway(overrides);
export const append: ReturnType<typeof gatewayHarness>['append'] = (accountId, events) =>
  kit.append(accountId, events);
export const account = (accountId: string, phoneNumber: string) => kit.account(accountId, phoneNumber);

export const request = (
  phone: string,
  body: string,
  source: 'manual' | 'system' = 'manual',
  messageId = newUuid(),
) =>
  ({
    type: 'message.outbound_requested',
    data: { message_id: messageId, phone, body, source, sender_name: null },
  }) as const;

export const outboxState = (messageId: string) =>
  gatewayDb.selectFrom('sms_outbox').select('state').where('message_id', '=', messageId).executeTakeFirst();
export const settled = (messageId: string) =>
  eventually(async () => {
    const row = await outboxState(messageId);
    return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
  });
export const messageRow = (messageId: string) =>
  services.db.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirstOrThrow();
/** The message as the API shows it, once the gateway's report of it has been projected. */
export const recorded = (messageId: string) =>
  eventually(async () => {
    const row = await messageRow(messageId);
    return row.sent || row.status === 'failed' ? row : undefined;
  });
export const sentTo = (phone: string) => twilio.messages.filter((message) => message.to === phone);
