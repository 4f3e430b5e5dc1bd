import { createDb, type CommandBus, type Database } from '@leadline/runtime';
import { fakeClock } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startTestSequencer } from '../../../system-test/workers';
import { type RunningSequencer } from '../src';
import { postInboundSms } from '../../../system-test/inbound-sms';

/** What the sequencer's test files share: one system per file, an account with a sequence, leads enrolled in it. */
export const HOUR = 3600_000;
// 10:00 in New York.
export const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));
export let system: TestSystem;
export let acme: PartnerClient;
export let claimsDb: Kysely<Database>;
const running: RunningSequencer[] = [];

export async function sequencer(
  commands: CommandBus = system.services.commands,
  leaseMs = 60_000,
  groupId = `${system.env.config.TOPIC_PREFIX}leadline.sequencer`,
) {
  const started = await startTestSequencer(system, { db: claimsDb, clock, commands, leaseMs, groupId });
  running.push(started);
  return started;
}

/**
 * The system (command API, projector, inbound decider) on this file's own database and topics, at
 * 10:00 in New York before each test, with the sequencers a test starts stopped after it.
 */
export function useSequencerSystem() {
  beforeAll(async () => {
    system = await startSystem({ clock });
    claimsDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 8 });
    acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  });
  beforeEach(() => clock.set(new Date('2026-03-02T15:00:00Z')));
  // Each test runs its own sequencers: none from an earlier test ticks in the background.
  afterEach(async () => {
    for (const started of running.splice(0)) await started.stop();
  });
  afterAll(async () => {
    await claimsDb?.destroy();
    await system?.close();
  });
}

let phones = 0;
/** A number not used before in this file, in the area of `prefix` (`+1305555` for Miami). */
export const phoneNumber = (prefix: string) => `${prefix}${String(1000 + ++phones).padStart(4, '0')}`;
export const nextPhone = () => phoneNumber('+1212555');

export const threeSteps = {
  name: 'Nurture',
  steps: [
    { type: 'fixed', message: 'Hi {{first_name}}' },
    { type: 'fixed', message: 'Day one', delay_hours: 24 },
    { type: 'fixed', message: 'Day two', delay_hours: 24, skip_if_replied: false },
  ],
};

export async function setUp(sequence: Record<string, unknown> = threeSteps) {
  // Steps go out without recorded consent here: the consent rule has its own tests.
  const account = (await acme.post('/accounts', { name: 'Sunrise', consent_required: false })).body;
  const created = (await acme.post(`/accounts/${account.id}/sequences`, sequence)).body;
  return {
    accountId: account.id as string,
    number: account.phone_number as string,
    sequenceId: created.id as string,
  };
}

export async function enrolledLead(
  accountId: string,
  sequenceId: string,
  fields: Record<string, unknown> = {},
) {
  const phone = nextPhone();
  await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Ana', ...fields });
  const enrolled = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
  return { phone, enrolled: enrolled.body };
}

export const bodiesOf = async (accountId: string, phone: string) =>
  (
    (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages?limit=250`))
      .body.messages as { body: string; direction: string }[]
  )
    .filter((message) => message.direction === 'outbound')
    .map((message) => message.body)
    .reverse();

export const leadOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}`)).body;

export const inbound = (to: string, from: string, body: string) => postInboundSms(system, { to, from, body });

/** Decides what is due now; the sequencer's appends are projected before it returns. */
export const settled = (run: RunningSequencer) => run.tick();
