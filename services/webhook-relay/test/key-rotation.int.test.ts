import { createCipheriv, randomBytes } from 'node:crypto';
import {
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
  type SecretBox,
} from '@leadline/runtime';
import { eventually, testDocuments } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../command-api/src/app';
import { resealWebhookSecrets } from '../../command-api/src/webhooks/reseal';
import { partnerClient } from '../../../system-test/client';
import { leadCreated, startHarness, type Harness, type Partner } from '../../../system-test/relay';
import { opensslHmacHex } from '@leadline/test-kit';

/** The key the harness's command API seals with until the rotation; the new key goes in front of it. */
const OLD_KEY = DEVELOPMENT_WEBHOOK_KEY;
const NEW_KEY = randomBytes(32);
const during = createSecretBox([NEW_KEY, OLD_KEY]);
const after = createSecretBox([NEW_KEY]);

let harness: Harness;
let partner: Partner;

beforeAll(async () => {
  harness = await startHarness();
  await harness.startRelayInstance({ secrets: during });
  partner = await harness.createPartner('Rotating CRM');
});
afterAll(() => harness?.close());

/** A secret as the log held it before rotation existed: `v1.<iv>.<tag>.<ciphertext>`, no binding. */
function sealedV1(key: Buffer, plaintext: string) {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.');
}

const webhooks = {
  legacy: { path: '/legacy', secret: 'whsec_legacy_0123456789', id: '' },
  old: { path: '/old', secret: 'whsec_old_key_0123456789', id: '' },
  new: { path: '/new', secret: 'whsec_new_key_0123456789', id: '' },
};

let lastEventId = '';

/** Appends a lead, waits until each webhook has its delivery queued, sends them with `box`'s relay. */
async function deliverOneEventWith(secrets: SecretBox) {
  const dispatcher = await harness.startRelayInstance({ consume: false, secrets });
  const before = harness.receiver.requests().length;
  const phone = `+1512555${String(1000 + Math.floor(Math.random() * 9000))}`;
  const [event] = await harness.append(partner, [leadCreated(phone)]);
  lastEventId = event!.id;
  await eventually(async () => {
    const rows = await harness.system.services.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', '=', event!.id)
      .execute();
    return rows.length === Object.keys(webhooks).length ? rows : undefined;
  });
  await dispatcher.dispatcher.drain();
  await dispatcher.stop();
  return harness.receiver.requests().slice(before);
}

function expectSignedWithOwnSecrets(requests: ReturnType<Harness['receiver']['requests']>) {
  for (const { path, secret } of Object.values(webhooks)) {
    const received = requests.filter((request) => request.path === path);
    expect(received, path).toHaveLength(1);
    expect(String(received[0]!.headers['x-service-signature'])).toBe(
      opensslHmacHex(secret, received[0]!.body),
    );
  }
}

describe('rotating the webhook encryption key', () => {
  it('keeps every webhook signing with its own secret through the rotation and after the old key is gone', async () => {
    // Before: a webhook from the days of v1 ciphertexts, and one sealed by the API under the old key.
    webhooks.legacy.id = newUuid();
    await harness.system.services.commands.append({
      stream: { topic: 'partner' },
      context: {
        partnerId: partner.id,
        actor: { kind: 'system', service: 'test' },
        correlationId: newUuid(),
      },
      events: [
        {
          type: 'webhook.created',
          data: {
            webhook_id: webhooks.legacy.id,
            url: harness.receiver.url(webhooks.legacy.path),
            events: ['lead.created'],
            secret_ciphertext: sealedV1(OLD_KEY, webhooks.legacy.secret),
          },
        },
      ],
    });
    const created = await partner.api.post('/webhooks', {
      url: harness.receiver.url(webhooks.old.path),
      events: ['lead.created'],
      secret: webhooks.old.secret,
    });
    webhooks.old.id = created.body.id;

    // During: a command API with the new key first seals the next webhook under it.
    const rotatedApi = await buildApp({
      db: harness.system.services.db,
      commands: harness.system.services.commands,
      numbers: {
        provisionNumber: async () => ({ phoneNumber: '+15550000000', providerId: 'PN0' }),
        isOwnNumber: async () => true,
        releaseNumber: async () => {},
      },
      clock: systemClock,
      newId: newUuid,
      publicUrl: harness.system.publicUrl,
      rateLimitPerMinute: 100_000,
      webhookSecrets: during,
      ...testDocuments(harness.system.services.db),
      personalDataKeys: harness.system.services.personalDataKeys,
    });
    try {
      const createdDuring = await partnerClient(rotatedApi, partner.key).post('/webhooks', {
        url: harness.receiver.url(webhooks.new.path),
        events: ['lead.created'],
        secret: webhooks.new.secret,
      });
      expect(createdDuring.status).toBe(201);
      webhooks.new.id = createdDuring.body.id;
    } finally {
      await rotatedApi.close();
    }
    const stored = async () =>
      Object.fromEntries(
        (
          await harness.system.services.db
            .selectFrom('webhooks')
            .select(['id', 'secret_ciphertext'])
            .where('partner_id', '=', partner.id)
            .execute()
        ).map((row) => [row.id, row.secret_ciphertext]),
      );
    const beforeReseal = await stored();
    expect(beforeReseal[webhooks.legacy.id]).toMatch(/^v1\./);
    expect(during.isCurrent(beforeReseal[webhooks.old.id]!)).toBe(false);
    expect(during.isCurrent(beforeReseal[webhooks.new.id]!)).toBe(true);

    // A relay holding both keys signs each delivery with each webhook's own secret.
    expectSignedWithOwnSecrets(await deliverOneEventWith(during));

    // The operator re-seals: the two older secrets move under the new key; a second run has nothing to do.
    const reseal = () =>
      resealWebhookSecrets({ ...harness.system.services, secrets: during, newId: newUuid });
    expect(await reseal()).toBe(2);
    expect(await reseal()).toBe(0);
    const afterReseal = await stored();
    expect(Object.values(afterReseal).every((sealed) => after.isCurrent(sealed))).toBe(true);
    expect(afterReseal[webhooks.new.id]).toBe(beforeReseal[webhooks.new.id]);

    // After: a relay without the old key still signs every delivery correctly.
    expectSignedWithOwnSecrets(await deliverOneEventWith(after));
  });

  it('does not open a secret copied onto another webhook', async () => {
    const db = harness.system.services.db;
    const { secret_ciphertext } = await db
      .selectFrom('webhooks')
      .select('secret_ciphertext')
      .where('id', '=', webhooks.old.id)
      .executeTakeFirstOrThrow();
    await db.updateTable('webhooks').set({ secret_ciphertext }).where('id', '=', webhooks.new.id).execute();
    const requests = await deliverOneEventWith(after);
    expect(requests.filter((request) => request.path === webhooks.new.path)).toHaveLength(0);
    expect(requests.filter((request) => request.path === webhooks.old.path)).toHaveLength(1);
    const [attempt] = await db
      .selectFrom('webhook_deliveries')
      .select(['status', 'last_error'])
      .where('webhook_id', '=', webhooks.new.id)
      .where('event_id', '=', lastEventId)
      .execute();
    expect(attempt).toMatchObject({ status: 'pending' });
    expect(attempt!.last_error).toBeTruthy();
  });
});
