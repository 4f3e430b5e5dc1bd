import { createPostgresDocumentStore } from '@leadline/runtime';
import { accountEvents, eventually, fakeClock, rawLogText } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRetentionPass } from '../../command-api/src/retention/pass';
import { readModelSnapshot } from '../../../system-test/log';
import { offlineResponder } from '../src/offline';
import type { Responder, TurnInput } from '../src/turn';
import {
  inbound,
  messagesOf,
  newAccount,
  PNG,
  startAgentSystem,
  turnSettled,
  type AgentSystem,
} from './harness';

const DAY = 86_400_000;
const clock = fakeClock(new Date());
/** What the agent gave the model (the offline responder) on each turn. */
const inputs: TurnInput[] = [];
const recording: Responder = {
  name: offlineResponder.name,
  respond: (input, signal) => {
    inputs.push(input);
    return offlineResponder.respond(input, signal);
  },
};
let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem({ clock, responder: recording });
});
afterAll(() => world?.close());

const PHONE = '+15125550471';
const KEPT_PHONE = '+15125550472';
const oldBody = 'Here is my license, write to me at wren.oldfield@example.org';
const collected = 'wren.oldfield@example.org';
const newBody = 'Any news on the Thornbury appraisal?';
const keptBody = 'Still there? Thornbury duplex question';

/** Every byte of this file's log, as Latin-1 text. */
const rawLog = () => rawLogText(world.system.services, world.system.env.config.TOPIC_PREFIX);

const retention = () => ({
  db: world.system.services.db,
  commands: world.system.services.commands,
  clock,
  personalDataKeys: world.system.services.personalDataKeys,
});

/** The account's documents, their bytes as the store opens them (sealed at rest). */
async function documentsOf(accountId: string) {
  const { db, personalDataKeys } = world.system.services;
  const store = createPostgresDocumentStore(db, personalDataKeys);
  const rows = await db.selectFrom('documents').select('id').where('account_id', '=', accountId).execute();
  return Promise.all(rows.map(async ({ id }) => ({ id, bytes: await store.get(id) })));
}

describe("an account's retention", () => {
  it('expires bodies and documents past retention_days and keeps the newer ones and what was collected', async () => {
    const { system, partner, media } = world;
    const account = await newAccount(partner, [
      { name: 'Email', type: 'email' },
      { name: 'Photo ID', type: 'document' },
    ]);
    const set = await partner.patch(`/accounts/${account.id}`, { retention_days: 30 });
    expect(set.status).toBe(200);
    expect((await partner.get(`/accounts/${account.id}`)).body.retention_days).toBe(30);
    // Another account keeps its content for good (the default).
    const keeper = await newAccount(partner);
    expect((await partner.get(`/accounts/${keeper.id}`)).body.retention_days).toBeNull();
    expect(
      (await partner.post(`/accounts/${account.id}/leads`, { phone: PHONE, name: 'Wren Oldfield' })).status,
    ).toBe(201);

    // T0: a text with an e-mail address and a photo; the agent collects both and answers.
    const document = media.host(PNG, 'image/png');
    const first = await inbound(system, account.number, PHONE, oldBody, [
      { url: document, type: 'image/png' },
    ]);
    await turnSettled(system, account.id, first);
    await inbound(system, keeper.number, KEPT_PHONE, keptBody);
    const lead = `/accounts/${account.id}/leads/${encodeURIComponent(PHONE)}`;
    const before = (await partner.get(`${lead}/checklist`)).body;
    expect(before.checklist).toMatchObject([
      { name: 'Email', status: 'completed', value: collected },
      { name: 'Photo ID', status: 'completed', file_url: expect.any(String) },
    ]);
    const [stored] = await documentsOf(account.id);
    expect(stored?.bytes).toEqual(PNG);
    // The key the photo is sealed under at rest (named in its header, after `LLDOC1`).
    const { bytes: sealed } = await system.services.db
      .selectFrom('documents')
      .select('bytes')
      .where('id', '=', stored!.id)
      .executeTakeFirstOrThrow();
    const documentKey = sealed!.subarray(6, 22).toString('latin1');

    // T0 + 20 days: another text, which the retention keeps 10 days longer.
    clock.advance(20 * DAY);
    const second = await inbound(system, account.number, PHONE, newBody);
    await turnSettled(system, account.id, second);

    // T0 + 30 days: T0's day is not yet past 30 days; nothing expires.
    clock.advance(10 * DAY);
    expect(await runRetentionPass(retention())).toEqual([]);

    // T0 + 31 days: T0's day is. Two instances passing at once expire it once.
    clock.advance(DAY);
    const passed = (await Promise.all([runRetentionPass(retention()), runRetentionPass(retention())])).flat();
    expect(passed).toEqual([
      { accountId: account.id, expiredBefore: expect.any(String), keysDestroyed: expect.any(Number) },
    ]);
    const expiries = (await accountEvents(system.services)).filter(
      (event) => event.type === 'account.content_expired',
    );
    expect(expiries).toMatchObject([
      { account_id: account.id, data: { expired_before: passed[0]!.expiredBefore } },
    ]);
    // The cutoff is the start of the UTC day 30 days before the pass's day.
    const today = new Date(clock.now().toISOString().slice(0, 10));
    expect(passed[0]!.expiredBefore).toBe(new Date(today.getTime() - 30 * DAY).toISOString());
    // A second pass finds nothing left to do.
    expect(await runRetentionPass(retention())).toEqual([]);

    // The old messages (the text and the agent's answer) keep their time, direction and status only.
    const messages = await eventually(async () => {
      const read = await messagesOf(partner, account.id, PHONE);
      return read.some((message) => message.body === oldBody) ? undefined : read;
    });
    const full = (
      await partner.get(`/accounts/${account.id}/conversations/${encodeURIComponent(PHONE)}/messages`)
    ).body.messages as { body: string; content_expired: boolean; sent_at: string; media?: unknown[] }[];
    const cutoff = new Date(passed[0]!.expiredBefore).getTime();
    const old = full.filter((message) => new Date(message.sent_at).getTime() < cutoff);
    const recent = full.filter((message) => new Date(message.sent_at).getTime() >= cutoff);
    expect(old.length).toBeGreaterThanOrEqual(2);
    for (const message of old) expect(message).toMatchObject({ body: '', content_expired: true });
    expect(old.find((message) => message.media)).toMatchObject({ media: [] });
    expect(recent.map((message) => message.body)).toContain(newBody);
    for (const message of recent) expect(message.content_expired).toBe(false);
    expect(messages.length).toBe(full.length);

    // The checklist still says what was collected, and when, without the values; the photo is gone.
    const after = (await partner.get(`${lead}/checklist`)).body;
    expect(after.completed_count).toBe(before.completed_count);
    expect(after.checklist).toEqual([
      expect.objectContaining({
        name: 'Email',
        status: 'completed',
        collected_at: before.checklist[0].collected_at,
      }),
      expect.objectContaining({
        name: 'Photo ID',
        status: 'completed',
        collected_at: before.checklist[1].collected_at,
      }),
    ]);
    for (const item of after.checklist) {
      expect(item).not.toHaveProperty('value');
      expect(item).not.toHaveProperty('file_url');
    }
    await eventually(async () => ((await documentsOf(account.id)).length === 0 ? true : undefined), {
      message: 'the expired document is still kept',
    });
    // Its bytes were sealed under the key of its day, destroyed: a copy kept anywhere reads as nothing.
    const opened = await system.services.personalDataKeys.openingKeys([documentKey]);
    expect(opened.get(documentKey)).toMatchObject({ key: null });
    // Who the lead is stays.
    expect((await partner.get(lead)).body.name).toBe('Wren Oldfield');

    // The log never held the bodies in clear; the old one's key is destroyed, the new one still opens.
    const log = await rawLog();
    expect([oldBody, collected, newBody, keptBody].filter((value) => log.includes(value))).toEqual([]);
    const received = (await accountEvents(system.services)).filter(
      (event) => event.type === 'message.received' && event.account_id === account.id,
    );
    const bodies = received.map((event) => (event.type === 'message.received' ? event.data.body : ''));
    expect(bodies).toEqual([expect.stringMatching(/^erased:/), newBody]);
    // The account without retention keeps everything: its day keys as well as its messages.
    const cutoffDay = passed[0]!.expiredBefore.slice(0, 10);
    expect(await system.services.personalDataKeys.hasPeriodsBefore(keeper.id, cutoffDay)).toBe(true);
    expect(await system.services.personalDataKeys.hasPeriodsBefore(account.id, cutoffDay)).toBe(false);
    expect((await messagesOf(partner, keeper.id, KEPT_PHONE)).map((message) => message.body)).toContain(
      keptBody,
    );

    // A rebuild from the log ends where the live read models are.
    const live = await readModelSnapshot(system.services.db);
    await system.rebuildReadModels();
    expect(await readModelSnapshot(system.services.db)).toEqual(live);

    // The model is no longer shown what expired, not even as empty messages.
    const third = await inbound(system, account.number, PHONE, 'One more question about the appraisal');
    await turnSettled(system, account.id, third);
    const history = inputs.at(-1)!.history.map((message) => message.body);
    expect(history).toContain(newBody);
    expect(history).not.toContain('');
  });
});
