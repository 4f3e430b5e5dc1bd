import { createHash, randomBytes } from 'node:crypto';
import type { DomainEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { randomIv } from '../random-bytes';
import type { PersonalDataKeys, SubjectKey } from './keys';
import { createPersonalDataSealer, UnknownPersonalDataKeyError } from './sealer';

/** Keys held in memory, one per subject and period: the sealer's crypto without the database. */
function keysInMemory(fixed: SubjectKey[] = []) {
  const byId = new Map(fixed.map((key) => [key.keyId, key]));
  const live = new Map(fixed.map((key) => [`${key.subject}\u0000`, key]));
  const notSealing = () => Promise.reject(new Error("retention and account erasure are not the sealer's"));
  const keys: PersonalDataKeys = {
    subjectOf: (_accountId, _kind, value) => `subject-of-${value}`,
    async sealingKeys(_accountId, subjects, period = null) {
      const found = new Map<string, SubjectKey>();
      for (const subject of subjects) {
        const name = `${subject}\u0000${period ?? ''}`;
        if (!live.has(name)) {
          const key = { keyId: randomBytes(12).toString('base64url'), subject, key: randomBytes(32) };
          live.set(name, key);
          byId.set(key.keyId, key);
        }
        found.set(subject, live.get(name)!);
      }
      return found;
    },
    async openingKeys(keyIds) {
      return new Map(keyIds.flatMap((keyId) => (byId.has(keyId) ? [[keyId, byId.get(keyId)!]] : [])));
    },
    // As a process that already read every key: what the lookups above would find, without creating.
    cachedSealingKey: (_accountId, subject, period = null) => live.get(`${subject}\u0000${period ?? ''}`),
    cachedOpeningKey: (keyId) => byId.get(keyId),
    async eraseSubject(_accountId, subject) {
      for (const [name, key] of live) {
        if (key.subject !== subject) continue;
        byId.set(key.keyId, { ...key, key: null });
        live.delete(name);
      }
    },
    hasPeriodsBefore: notSealing,
    expirePeriods: notSealing,
    eraseAccount: notSealing,
  };
  return keys;
}

const leadCreated = (data: Record<string, unknown> = {}) =>
  ({
    id: '0b7e3c9a-5d1f-4c2e-9a8b-1f2e3d4c5b6a',
    type: 'lead.created',
    version: 1,
    account_id: 'acct_fixture',
    partner_id: 'partner_fixture',
    occurred_at: '2026-11-01T12:00:00.000Z',
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'c',
    causation_id: null,
    data: {
      lead_id: 'lead_fixture',
      phone: '+15125550123',
      name: 'Wren Castellane',
      first_name: null,
      last_name: null,
      email: 'wren@example.com',
      company: null,
      notes: 'Prefers texts — après 18h',
      source: null,
      external_id: null,
      property_address: null,
      metadata: { income: 82000 },
      status: 'new',
      auto_sequence: false,
      origin: 'api',
      ...data,
    },
  }) as DomainEvent;

describe('the personal-data sealer', () => {
  it('opens values sealed before it handed node:crypto key objects: the format on the log is unchanged', async () => {
    // Sealed by the sealer as it was when the first sealed events reached the log.
    const fixtureKey = {
      keyId: 'fixtureKeyId0001',
      subject: 'subject-of-+15125550123',
      key: createHash('sha256').update('sealer fixture key').digest(),
    };
    const onTheLog = leadCreated({
      phone: 'sealed:1:fixtureKeyId0001:s:Tnuth5pvoRM6G8u_wHTukh4rH-dD8ANuwFiepYW3fqitaxh8VRh0Vw',
      name: 'sealed:1:fixtureKeyId0001:s:5MM6Mcs22g70zB6KMNjZGUsWjuKZYASEbMm0LYN_fWqUU3lBtDosDA9MQg',
      email: 'sealed:1:fixtureKeyId0001:s:bIrwZ7N6tiIYh90gmuLzJ1eO3zAYtN18Dbu0txm2JFiKnrW5B5VyM_ZAgz8',
      notes:
        'sealed:1:fixtureKeyId0001:s:_4cAve3oHKap2DBr5D4oxzoAumDwy08J3Xql0neEi3mOmKMJZRaCXSEEW3qAqzTxkFHxmtaOL3g',
      metadata: {
        income: 'sealed:1:fixtureKeyId0001:j:anJwcPnoA35V28kVao9ZggxLfexZV74uaZwcPASMO8Tm',
      },
    });
    const sealer = createPersonalDataSealer(keysInMemory([fixtureKey]));
    expect(await sealer.open(onTheLog)).toEqual(leadCreated());

    // And what it seals now opens with the same key, in the same shape.
    const sealed = await sealer.seal(leadCreated());
    const data = sealed.data as Record<string, unknown>;
    expect(data.phone).toMatch(/^sealed:1:fixtureKeyId0001:s:[A-Za-z0-9_-]+$/);
    expect(data.metadata).toEqual({ income: expect.stringMatching(/^sealed:1:fixtureKeyId0001:j:/) });
    expect(await sealer.open(sealed)).toEqual(leadCreated());
  });

  it('seals every value under its own IV, across the blocks of random bytes IVs are cut from', async () => {
    const sealer = createPersonalDataSealer(keysInMemory());
    const ivs = new Set<string>();
    // 5 values an event: 1,000 values draw from three blocks of 341 IVs.
    for (let i = 0; i < 200; i++) {
      const sealed = await sealer.seal(leadCreated());
      const { phone, name, email, notes, metadata } = sealed.data as {
        [field in 'phone' | 'name' | 'email' | 'notes']: string;
      } & { metadata: { income: string } };
      for (const value of [phone, name, email, notes, metadata.income])
        ivs.add(Buffer.from(value.split(':')[4]!, 'base64url').subarray(0, 12).toString('hex'));
      expect(await sealer.open(sealed)).toEqual(leadCreated());
    }
    expect(ivs.size).toBe(1000);
  });

  it('keeps an IV it handed out as it was after its block is used up', () => {
    const first = randomIv();
    const copy = Buffer.from(first);
    const more = Array.from({ length: 700 }, () => randomIv());
    expect(first).toEqual(copy);
    expect(more.every((iv) => iv.length === 12)).toBe(true);
  });

  it('reads an erased subject as erased, and refuses a moved value and an unknown key', async () => {
    const keys = keysInMemory();
    const sealer = createPersonalDataSealer(keys);
    const sealed = await sealer.seal(leadCreated());

    // The name copied into the notes: bound to its field, it does not open there.
    const data = sealed.data as Record<string, unknown>;
    const moved = { ...sealed, data: { ...data, notes: data.name } } as DomainEvent;
    await expect(sealer.open(moved)).rejects.toThrow(/unable to authenticate/i);

    const stranger = createPersonalDataSealer(keysInMemory());
    await expect(stranger.open(sealed)).rejects.toThrow(UnknownPersonalDataKeyError);

    await keys.eraseSubject('acct_fixture', 'subject-of-+15125550123');
    const erased = await sealer.open(sealed);
    expect(erased.data).toMatchObject({
      phone: 'erased:subject-of-+15125550123',
      name: 'erased:subject-of-+15125550123',
      metadata: { income: 'erased:subject-of-+15125550123' },
    });
  });
});
