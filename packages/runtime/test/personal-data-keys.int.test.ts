import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DomainEvent } from '@leadline/events';
import { createTestEnvironment, newLeadData, type TestEnvironment } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/database';
import { ensureDatabase, migrate } from '../src/db/migrate';
import type { Database } from '../src/db/schema';
import { createDirectoryDocumentStore, createPostgresDocumentStore } from '../src/documents/store';
import { createPersonalDataKeys, rewrapPersonalDataKeys } from '../src/personal-data/keys';
import { createPersonalDataSealer } from '../src/personal-data/sealer';

let env: TestEnvironment;
let db: Kysely<Database>;
beforeAll(async () => {
  env = await createTestEnvironment();
  await ensureDatabase(env.config.DATABASE_URL);
  await migrate(env.config.DATABASE_URL);
  db = createDb(env.config.DATABASE_URL, { maxConnections: 2 });
});
afterAll(async () => {
  await db?.destroy();
  await env?.dispose();
});

const hashKey = randomBytes(32);
const [oldMaster, newMaster] = [randomBytes(32), randomBytes(32)];
/** A process started with these master keys (each caches nothing across the test's steps). */
const sealerWith = (masterKeys: Buffer[]) => {
  const keys = createPersonalDataKeys(db, { masterKeys, hashKey }, { cacheMs: 0 });
  return { keys, sealer: createPersonalDataSealer(keys) };
};

/** An event of the test's account, happening now. */
const eventOf = (type: DomainEvent['type'], data: Record<string, unknown>) =>
  ({
    id: crypto.randomUUID(),
    type,
    version: 1,
    account_id: 'acct_keys',
    partner_id: 'partner_keys',
    occurred_at: new Date().toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'c',
    causation_id: null,
    data,
  }) as DomainEvent;

const leadCreated = (name: string, phone = '+15125550188') =>
  eventOf(
    'lead.created',
    newLeadData({
      lead_id: 'lead_1',
      phone,
      name,
      email: 'rotation@example.com',
      metadata: { income: 82000 },
    }),
  );

describe('personal-data keys', () => {
  it('open what was sealed under the old master key after rotation, and only under the new one once re-wrapped', async () => {
    const event = leadCreated('Rowan Ashdown');
    const sealed = await sealerWith([oldMaster]).sealer.seal(event);
    expect(JSON.stringify(sealed)).not.toContain('Rowan');
    expect(JSON.stringify(sealed)).not.toContain('82000');

    // Rotated: the new key first, the old one still listed.
    expect(await sealerWith([newMaster, oldMaster]).sealer.open(sealed)).toEqual(event);
    // The new key alone cannot unwrap what the old one wrapped.
    await expect(sealerWith([newMaster]).sealer.open(sealed)).rejects.toThrow();

    expect(await rewrapPersonalDataKeys(db, { masterKeys: [newMaster, oldMaster] })).toBe(1);
    expect(await rewrapPersonalDataKeys(db, { masterKeys: [newMaster, oldMaster] })).toBe(0);
    // The old master key can go: the log was not rewritten, and it still opens.
    expect(await sealerWith([newMaster]).sealer.open(sealed)).toEqual(event);
  });

  it("erases every key of an account at once, only if its transaction commits, and no other account's", async () => {
    // One process, caching as the services do: what it remembers must follow the transaction.
    const keys = createPersonalDataKeys(db, { masterKeys: [newMaster], hashKey });
    const sealer = createPersonalDataSealer(keys);
    const inAccount = (accountId: string, name: string) =>
      ({ ...leadCreated(name), account_id: accountId }) as DomainEvent;
    const sealed = await sealer.seal(inAccount('acct_whole', 'Isolde Varnham'));
    const other = await sealer.seal(inAccount('acct_beside', 'Isolde Varnham'));
    await keys.sealingKeys('acct_whole', [keys.subjectOf('acct_whole', 'team_member', 'member_1')]);
    const nameOf = async (event: DomainEvent) =>
      ((await sealer.open(event)) as Extract<DomainEvent, { type: 'lead.created' }>).data.name;
    const erasedAt = new Date('2026-01-02T03:04:05Z');

    await db
      .transaction()
      .execute(async (trx) => {
        expect(await keys.eraseAccount('acct_whole', erasedAt, trx)).toBe(2);
        throw new Error('the append failed');
      })
      .catch(() => undefined);
    expect(await nameOf(sealed)).toBe('Isolde Varnham');

    expect(await db.transaction().execute((trx) => keys.eraseAccount('acct_whole', erasedAt, trx))).toBe(2);
    expect(await nameOf(sealed)).toMatch(/^erased:/);
    expect(await nameOf(other)).toBe('Isolde Varnham');
    const left = await db
      .selectFrom('personal_data_keys')
      .select(['account_id', 'erased_at'])
      .where('account_id', 'in', ['acct_whole', 'acct_beside'])
      .orderBy('account_id')
      .execute();
    expect(left).toEqual([
      { account_id: 'acct_beside', erased_at: null },
      { account_id: 'acct_whole', erased_at: erasedAt },
      { account_id: 'acct_whole', erased_at: erasedAt },
    ]);
    // Asked again, nothing is left to destroy.
    expect(await keys.eraseAccount('acct_whole', erasedAt)).toBe(0);
  });

  it('reads an erased subject as erased, and seals what comes after under a new key', async () => {
    const { keys, sealer } = sealerWith([newMaster]);
    const before = await sealer.seal(leadCreated('Marlow Fenwick'));
    const subject = keys.subjectOf('acct_keys', 'lead', '+15125550188');
    await keys.eraseSubject('acct_keys', subject);

    const opened = (await sealerWith([newMaster]).sealer.open(before)) as Extract<
      DomainEvent,
      { type: 'lead.created' }
    >;
    expect(opened.data).toMatchObject({
      phone: `erased:${subject}`,
      name: `erased:${subject}`,
      email: `erased:${subject}`,
      metadata: { income: `erased:${subject}` },
      lead_id: 'lead_1',
      first_name: null,
    });

    const later = leadCreated('Marlow Fenwick');
    const again = await sealer.seal(later);
    expect(await sealerWith([newMaster]).sealer.open(again)).toEqual(later);
  });

  it('writes a report on earlier work about an erased person as erased, without keying them again', async () => {
    const { keys, sealer } = sealerWith([newMaster]);
    const phone = '+15125550177';
    await sealer.seal(leadCreated('Idris Penhallow', phone));
    const subject = keys.subjectOf('acct_keys', 'lead', phone);
    await keys.eraseSubject('acct_keys', subject);
    const liveKeys = () =>
      db
        .selectFrom('personal_data_keys')
        .select('key_id')
        .where('account_id', '=', 'acct_keys')
        .where('subject', '=', subject)
        .where('erased_at', 'is', null)
        .execute();

    // The carrier's delivery report of a send made before the erasure, and the gateway's failure.
    const report = (type: 'message.status_updated' | 'message.failed') =>
      eventOf(
        type,
        type === 'message.failed'
          ? {
              message_id: 'message_1',
              phone,
              reason: 'provider_error',
              error_code: '30006',
              error_message: `Landline ${phone}`,
            }
          : {
              message_id: 'message_1',
              phone,
              provider_message_id: 'SM1',
              status: 'delivered',
              provider_status: 'delivered',
              error_code: null,
            },
      );
    for (const type of ['message.status_updated', 'message.failed'] as const) {
      const sealed = await sealer.seal(report(type));
      expect(JSON.stringify(sealed)).not.toContain('5125550177');
      expect(sealed.data).toMatchObject({ phone: `erased:${subject}` });
      expect(await sealerWith([newMaster]).sealer.open(sealed)).toMatchObject({
        data: { phone: `erased:${subject}`, message_id: 'message_1' },
      });
    }
    // An AI turn whose model call was under way at the erasure, skipped since: what the AI wrote of
    // the person goes as erased too.
    const skippedTurn = eventOf('ai.turn_completed', {
      phone,
      message_ids: ['message_2'],
      sequence_step: null,
      outcome: 'skipped',
      reason: 'lead_not_found',
      reply_message_id: null,
      summary: 'Idris Penhallow asked about refinancing.',
      responder: 'model',
    });
    const sealedTurn = await sealer.seal(skippedTurn);
    expect(JSON.stringify(sealedTurn)).not.toMatch(/5125550177|Penhallow/);
    expect(sealedTurn.data).toMatchObject({ phone: `erased:${subject}`, summary: `erased:${subject}` });
    expect(await liveKeys()).toEqual([]);

    // The person comes back (imported again): a new key, which a report then uses.
    const imported = leadCreated('Idris Penhallow', phone);
    expect(await sealerWith([newMaster]).sealer.open(await sealer.seal(imported))).toEqual(imported);
    expect(await liveKeys()).toHaveLength(1);
    const delivered = report('message.status_updated');
    expect(await sealerWith([newMaster]).sealer.open(await sealer.seal(delivered))).toEqual(delivered);
  });

  it('refuses a value moved to another event or another field', async () => {
    const { sealer } = sealerWith([newMaster]);
    const sealed = (await sealer.seal(leadCreated('Tamsin Vale'))) as Extract<
      DomainEvent,
      { type: 'lead.created' }
    >;
    const moved = { ...sealed, data: { ...sealed.data, notes: sealed.data.name } } as DomainEvent;
    await expect(sealer.open(moved)).rejects.toThrow();
    const copied = { ...sealed, id: crypto.randomUUID() } as DomainEvent;
    await expect(sealer.open(copied)).rejects.toThrow();
  });

  it("seals a message's content under its UTC day's key: expiring the day leaves the lead's phone, and later days", async () => {
    const { keys, sealer } = sealerWith([newMaster]);
    const lookups: (string | null | undefined)[] = [];
    const counted = createPersonalDataSealer({
      ...keys,
      sealingKeys: (accountId, subjects, period) => {
        lookups.push(period);
        return keys.sealingKeys(accountId, subjects, period);
      },
    });
    const received = (phone: string, day: string, body: string) =>
      ({
        id: crypto.randomUUID(),
        type: 'message.received',
        version: 1,
        account_id: 'acct_days',
        partner_id: 'partner_keys',
        occurred_at: `${day}T23:59:59.000Z`,
        actor: { kind: 'system', service: 'test' },
        correlation_id: 'c',
        causation_id: null,
        data: {
          message_id: crypto.randomUUID(),
          phone,
          to: '+15125550100',
          body,
          provider_message_id: 'SM1',
          media: [{ url: 'https://api.twilio.com/media/ME1', content_type: 'image/png' }],
        },
      }) as DomainEvent;
    // A burst of one day for a hundred leads: one lookup of their lasting keys, one of the day's.
    const phones = Array.from({ length: 100 }, (_, index) => `+1512555${String(3000 + index)}`);
    const burst = await Promise.all(
      phones.map((phone) => counted.seal(received(phone, '2026-01-10', `Day one from ${phone}`))),
    );
    expect(lookups.sort()).toEqual(['2026-01-10', null]);
    const nextDay = received(phones[0]!, '2026-01-11', 'Day two');
    const sealedNextDay = await sealer.seal(nextDay);

    expect(await keys.hasPeriodsBefore('acct_days', '2026-01-11')).toBe(true);
    expect(await keys.expirePeriods('acct_days', '2026-01-11', new Date())).toBe(100);
    expect(await keys.hasPeriodsBefore('acct_days', '2026-01-11')).toBe(false);
    const opened = (await sealerWith([newMaster]).sealer.open(burst[0]!)) as Extract<
      DomainEvent,
      { type: 'message.received' }
    >;
    const subject = keys.subjectOf('acct_days', 'lead', phones[0]!);
    expect(opened.data).toMatchObject({
      phone: phones[0],
      body: `erased:${subject}`,
      media: [{ url: `erased:${subject}`, content_type: 'image/png' }],
    });
    expect(await sealerWith([newMaster]).sealer.open(sealedNextDay)).toEqual(nextDay);

    // Erasing the person destroys every key of theirs, the lasting one and each day's.
    await keys.eraseSubject('acct_days', subject);
    const erased = (await sealerWith([newMaster]).sealer.open(sealedNextDay)) as typeof opened;
    expect(erased.data).toMatchObject({ phone: `erased:${subject}`, body: `erased:${subject}` });
  });

  it.each(['directory', 'postgres'] as const)(
    "keep document bytes sealed under the lead's key in the %s store, gone once the lead is erased",
    async (kind) => {
      const { keys } = sealerWith([newMaster]);
      const directory = await mkdtemp(path.join(tmpdir(), 'leadline-documents-'));
      const store =
        kind === 'directory'
          ? createDirectoryDocumentStore(directory, db, keys)
          : createPostgresDocumentStore(db, keys);
      const [id, removed] = [crypto.randomUUID(), crypto.randomUUID()];
      const phone = kind === 'directory' ? '+15125550191' : '+15125550192';
      for (const documentId of [id, removed]) {
        await db
          .insertInto('documents')
          .values({
            id: documentId,
            account_id: 'acct_docs',
            phone,
            message_id: documentId,
            media_index: 0,
            content_type: 'application/pdf',
            file_size: 30,
            text_content: null,
            bytes: null,
            created_at: new Date(),
          })
          .execute();
      }
      const bytes = Buffer.from('%PDF-1.4 W-2 wages 84,120.55 Rowan');
      await store.put(id, bytes);
      const atRest =
        kind === 'directory'
          ? await readFile(path.join(directory, id))
          : (await db.selectFrom('documents').select('bytes').where('id', '=', id).executeTakeFirstOrThrow())
              .bytes!;
      expect(atRest.includes(Buffer.from('84,120.55'))).toBe(false);
      expect(await store.get(id)).toEqual(bytes);

      // Removing one document destroys its bytes alone; removing it again is no error.
      await store.put(removed, bytes);
      await store.remove([removed]);
      await store.remove([removed]);
      expect(await store.get(removed)).toBeUndefined();
      expect(await store.get(id)).toEqual(bytes);
      if (kind === 'directory') expect(await readdir(directory)).toEqual([id]);

      // The bytes are sealed under the key of the day they came: expiring that day destroys them too.
      const day = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      if (kind === 'postgres') {
        expect(await keys.expirePeriods('acct_docs', day, new Date())).toBeGreaterThan(0);
        expect(await store.get(id)).toBeUndefined();
      }
      await keys.eraseSubject('acct_docs', keys.subjectOf('acct_docs', 'lead', phone));
      expect(await store.get(id)).toBeUndefined();
    },
  );
});
