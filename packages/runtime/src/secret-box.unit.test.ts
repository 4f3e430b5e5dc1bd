import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from './config';
import {
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  webhookSecretConfig,
  withWebhookEncryptionKeys,
} from './secret-box';

const hook = { partnerId: 'partner-1', webhookId: 'webhook-1' };

/** The format the log held before rotation: `v1.<iv>.<tag>.<ciphertext>`, no associated data. */
function sealV1(key: Buffer, plaintext: string) {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

describe('the secret box', () => {
  const box = createSecretBox(randomBytes(32));

  it('round-trips, and never seals the same secret to the same text', () => {
    const sealed = box.seal('whsec_correct horse battery staple', hook);
    expect(sealed).not.toContain('horse');
    expect(box.seal('whsec_correct horse battery staple', hook)).not.toBe(sealed);
    expect(box.open(sealed, hook)).toBe('whsec_correct horse battery staple');
  });

  it('refuses a tampered ciphertext or another key', () => {
    const parts = box.seal('secret', hook).split('.');
    const flipped = Buffer.from(parts[4]!, 'base64url');
    flipped[0]! ^= 1;
    expect(() => box.open([...parts.slice(0, 4), flipped.toString('base64url')].join('.'), hook)).toThrow();
    expect(() => createSecretBox(randomBytes(32)).open(box.seal('secret', hook), hook)).toThrow();
  });

  it('binds a secret to its webhook and partner: copied onto another, it does not open', () => {
    const sealed = box.seal('secret', hook);
    expect(() => box.open(sealed, { ...hook, webhookId: 'webhook-2' })).toThrow();
    expect(() => box.open(sealed, { ...hook, partnerId: 'partner-2' })).toThrow();
  });

  it("binds an account's tax id to the account and partner, apart from any webhook secret", () => {
    const taxId = { partnerId: 'partner-1', accountId: 'account-1', field: 'tax_id' as const };
    const sealed = box.seal('12-3456789', taxId);
    expect(box.open(sealed, taxId)).toBe('12-3456789');
    expect(() => box.open(sealed, { ...taxId, accountId: 'account-2' })).toThrow();
    expect(() => box.open(sealed, { partnerId: 'partner-1', webhookId: 'account-1' })).toThrow();
  });

  it('rotates: the newest key seals, every configured key opens what it sealed, old v1 text included', () => {
    const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
    const before = createSecretBox(oldKey);
    const sealedBefore = before.seal('old secret', hook);
    const legacy = sealV1(oldKey, 'legacy secret');
    const during = createSecretBox([newKey, oldKey]);
    const sealedDuring = during.seal('new secret', hook);
    expect(during.open(sealedBefore, hook)).toBe('old secret');
    expect(during.open(legacy, { partnerId: 'any', webhookId: 'any' })).toBe('legacy secret');
    expect(during.open(sealedDuring, hook)).toBe('new secret');
    expect([sealedBefore, legacy, sealedDuring].map(during.isCurrent)).toEqual([false, false, true]);
    // Once everything is re-sealed, the old key can go; what it sealed no longer opens.
    const after = createSecretBox([newKey]);
    expect(after.open(during.seal('old secret', hook), hook)).toBe('old secret');
    expect(() => after.open(sealedBefore, hook)).toThrow(/not configured/);
    expect(() => after.open(legacy, hook)).toThrow();
  });
});

describe('the encryption key settings', () => {
  const schema = z.object(webhookSecretConfig).transform(withWebhookEncryptionKeys);
  const key = randomBytes(32);

  it.each([
    ['hex', key.toString('hex')],
    ['base64', key.toString('base64')],
    ['base64url', key.toString('base64url')],
  ])('reads 32 bytes as %s', (_form, value) => {
    expect(loadConfig(schema, { WEBHOOK_ENCRYPTION_KEY: value }).WEBHOOK_ENCRYPTION_KEYS).toEqual([key]);
  });

  it('takes several keys newest first, then the single key, once', () => {
    const [newest, middle] = [randomBytes(32), randomBytes(32)];
    const config = loadConfig(schema, {
      WEBHOOK_ENCRYPTION_KEYS: `${newest.toString('base64')}, ${middle.toString('hex')}`,
      WEBHOOK_ENCRYPTION_KEY: key.toString('hex'),
    });
    expect(config.WEBHOOK_ENCRYPTION_KEYS).toEqual([newest, middle, key]);
    expect(
      loadConfig(schema, {
        WEBHOOK_ENCRYPTION_KEYS: key.toString('hex'),
        WEBHOOK_ENCRYPTION_KEY: key.toString('hex'),
      }).WEBHOOK_ENCRYPTION_KEYS,
    ).toEqual([key]);
  });

  it('refuses a key of another length', () => {
    expect(() => loadConfig(schema, { WEBHOOK_ENCRYPTION_KEY: randomBytes(16).toString('hex') })).toThrow(
      /WEBHOOK_ENCRYPTION_KEY/,
    );
    expect(() =>
      loadConfig(schema, {
        WEBHOOK_ENCRYPTION_KEYS: `${key.toString('hex')},${randomBytes(16).toString('hex')}`,
      }),
    ).toThrow(/WEBHOOK_ENCRYPTION_KEYS/);
  });

  it('falls back to the development key outside production only', () => {
    expect(loadConfig(schema, {}).WEBHOOK_ENCRYPTION_KEYS).toEqual([DEVELOPMENT_WEBHOOK_KEY]);
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/WEBHOOK_ENCRYPTION_KEYS: Required/);
  });
});
