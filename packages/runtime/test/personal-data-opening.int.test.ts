import { randomBytes } from 'node:crypto';
import {
  createEventCodec,
  createSchemaRegistry,
  topicNames,
  type DomainEvent,
  type EventCodec,
} from '@leadline/events';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/database';
import { ensureDatabase, migrate } from '../src/db/migrate';
import type { Database } from '../src/db/schema';
import { createPersonalDataKeys, type PersonalDataKeys } from '../src/personal-data/keys';
import { createPersonalDataSealer } from '../src/personal-data/sealer';

let env: TestEnvironment;
let db: Kysely<Database>;
beforeAll(async () => {
  env = await createTestEnvironment();
  await ensureDatabase(env.config.DATABASE_URL);
  await migrate(env.config.DATABASE_URL);
  db = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
}, 60_000);
afterAll(async () => {
  await db?.destroy();
  await env?.dispose();
});

const settings = { masterKeys: [randomBytes(32)], hashKey: randomBytes(32) };

/** A process's keys, counting the key lookups its opening makes. */
function processKeys() {
  const keys = createPersonalDataKeys(db, settings, { cacheMs: 0 });
  const lookups: string[][] = [];
  const counted: PersonalDataKeys = {
    ...keys,
    openingKeys: (keyIds) => {
      lookups.push([...keyIds]);
      return keys.openingKeys(keyIds);
    },
  };
  return { keys: counted, lookups };
}

const leadCreated = (phone: string, name: string) =>
  ({
    id: crypto.randomUUID(),
    type: 'lead.created',
    version: 1,
    account_id: 'acct_opening',
    partner_id: 'partner_opening',
    occurred_at: new Date().toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'c',
    causation_id: null,
    data: {
      lead_id: crypto.randomUUID(),
      phone,
      name,
      first_name: null,
      last_name: null,
      email: 'opening@example.com',
      company: null,
      notes: null,
      source: null,
      external_id: null,
      property_address: null,
      metadata: {},
      status: 'new',
      auto_sequence: false,
      origin: 'api',
    },
  }) as DomainEvent;

describe('opening personal data on decode', () => {
  let codec: EventCodec;
  let lookups: string[][];
  beforeAll(async () => {
    const counted = processKeys();
    lookups = counted.lookups;
    const registry = createSchemaRegistry(env.config.SCHEMA_REGISTRY_URL);
    codec = await createEventCodec(
      registry,
      topicNames(env.config.TOPIC_PREFIX),
      createPersonalDataSealer(counted.keys),
    );
  }, 60_000);

  it('opens every type by default, and leaves sealed the types a reader says it does not read', async () => {
    const event = leadCreated('+15125550301', 'Isolde Marchbank');
    const record = await codec.encode(event);
    expect(record.toString('utf8')).not.toContain('Isolde');

    expect(await codec.decode(record)).toEqual(event);
    expect(await codec.decode(record, { opens: (type) => type === 'lead.created' })).toEqual(event);
    lookups.length = 0;

    // A reader of ids only (the sequencer): the values stay as on the log, and no key is looked up.
    const unopened = await codec.decode(record, { opens: () => false });
    expect(unopened).toMatchObject({ id: event.id, type: 'lead.created', account_id: 'acct_opening' });
    expect(unopened.data).toMatchObject({
      lead_id: (event.data as { lead_id: string }).lead_id,
      phone: expect.stringMatching(/^sealed:1:/),
      name: expect.stringMatching(/^sealed:1:/),
      email: expect.stringMatching(/^sealed:1:/),
      status: 'new',
    });
    expect(lookups).toEqual([]);
  });

  it('gives two processes keying the same new people at once one key each person, used by both', async () => {
    const [first, second] = [processKeys(), processKeys()];
    const [sealFirst, sealSecond] = [first, second].map(({ keys }) => createPersonalDataSealer(keys));
    const phones = Array.from({ length: 40 }, (_, i) => `+1512555${String(4000 + i)}`);
    const sealed = await Promise.all(
      phones.flatMap((phone) => [
        sealFirst!.seal(leadCreated(phone, `First ${phone}`)),
        sealSecond!.seal(leadCreated(phone, `Second ${phone}`)),
      ]),
    );
    const keyIdOf = (event: DomainEvent) => (event.data as { phone: string }).phone.split(':')[2] ?? '';
    for (let i = 0; i < phones.length; i++) expect(keyIdOf(sealed[2 * i]!)).toBe(keyIdOf(sealed[2 * i + 1]!));
    const live = await db
      .selectFrom('personal_data_keys')
      .select(({ fn }) => fn.countAll<string>().as('count'))
      .where('account_id', '=', 'acct_opening')
      .where('erased_at', 'is', null)
      .where('key_id', 'in', sealed.map(keyIdOf))
      .executeTakeFirstOrThrow();
    expect(Number(live.count)).toBe(phones.length);

    // Each opens what the other sealed, in a process that made neither key.
    const reader = createPersonalDataSealer(processKeys().keys);
    for (let i = 0; i < phones.length; i++) {
      expect((await reader.open(sealed[2 * i + 1]!)).data).toMatchObject({
        phone: phones[i],
        name: `Second ${phones[i]}`,
      });
    }
  });
});
