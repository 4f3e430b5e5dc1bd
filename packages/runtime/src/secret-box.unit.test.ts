import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from './config';
import {
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  webhookSecretConfig,
  withWebhookEncryptionKey,
} from './secret-box';

describe('the secret box', () => {
  const box = createSecretBox(randomBytes(32));

  it('round-trips, and never seals the same secret to the same text', () => {
    const sealed = box.seal('whsec_correct horse battery staple');
    expect(sealed).not.toContain('horse');
    expect(box.seal('whsec_correct horse battery staple')).not.toBe(sealed);
    expect(box.open(sealed)).toBe('whsec_correct horse battery staple');
  });

  it('refuses a tampered ciphertext or another key', () => {
    const [version, iv, tag, ciphertext] = box.seal('secret').split('.');
    const flipped = Buffer.from(ciphertext!, 'base64url');
    flipped[0]! ^= 1;
    expect(() => box.open([version, iv, tag, flipped.toString('base64url')].join('.'))).toThrow();
    expect(() => createSecretBox(randomBytes(32)).open(box.seal('secret'))).toThrow();
  });
});

describe('the encryption key setting', () => {
  const schema = z.object(webhookSecretConfig).transform(withWebhookEncryptionKey);
  const key = randomBytes(32);

  it.each([
    ['hex', key.toString('hex')],
    ['base64', key.toString('base64')],
    ['base64url', key.toString('base64url')],
  ])('reads 32 bytes as %s', (_form, value) => {
    expect(loadConfig(schema, { WEBHOOK_ENCRYPTION_KEY: value }).WEBHOOK_ENCRYPTION_KEY).toEqual(key);
  });

  it('refuses a key of another length', () => {
    expect(() => loadConfig(schema, { WEBHOOK_ENCRYPTION_KEY: randomBytes(16).toString('hex') })).toThrow(
      /WEBHOOK_ENCRYPTION_KEY/,
    );
  });

  it('falls back to the development key outside production only', () => {
    expect(loadConfig(schema, {}).WEBHOOK_ENCRYPTION_KEY).toEqual(DEVELOPMENT_WEBHOOK_KEY);
    expect(() => loadConfig(schema, { NODE_ENV: 'production' })).toThrow(/WEBHOOK_ENCRYPTION_KEY: Required/);
  });
});
