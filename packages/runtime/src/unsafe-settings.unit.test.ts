import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { DEVELOPMENT_DOCUMENT_LINK_KEY } from './documents/links';
import { DEVELOPMENT_WEBHOOK_KEY } from './secret-box';
import { documentLinkKeyRisks, guardUnsafeSettings, webhookKeyRisks } from './unsafe-settings';

const unsafe = [
  { setting: 'TWILIO_AUTH_TOKEN', risk: 'not set' },
  { setting: 'WEBHOOK_ALLOW_PRIVATE_TARGETS', risk: 'is true' },
];

describe('unsafe settings', () => {
  it('stop a production service, naming every setting', () => {
    expect(() => guardUnsafeSettings('relay', 'production', unsafe, vi.fn())).toThrow(
      /relay refuses to start in production[\s\S]*TWILIO_AUTH_TOKEN: not set[\s\S]*WEBHOOK_ALLOW_PRIVATE_TARGETS: is true/,
    );
  });

  it('are one loud warning elsewhere, and nothing when there are none', () => {
    const warn = vi.fn();
    guardUnsafeSettings('relay', 'development', unsafe, warn);
    expect(warn).toHaveBeenCalledOnce();
    expect(warn.mock.calls[0]![0]).toMatch(/WARNING[\s\S]*TWILIO_AUTH_TOKEN[\s\S]*WEBHOOK_ALLOW_PRIVATE/);
    guardUnsafeSettings('relay', 'production', [], warn);
    expect(warn).toHaveBeenCalledOnce();
  });

  it('include the development webhook key among the configured keys', () => {
    expect(webhookKeyRisks([randomBytes(32)])).toEqual([]);
    expect(webhookKeyRisks([randomBytes(32), DEVELOPMENT_WEBHOOK_KEY])).toEqual([
      expect.objectContaining({ setting: expect.stringContaining('WEBHOOK_ENCRYPTION_KEY') }),
    ]);
  });

  it('include the development document link key among the configured keys', () => {
    expect(documentLinkKeyRisks([randomBytes(32)])).toEqual([]);
    expect(documentLinkKeyRisks([randomBytes(32), DEVELOPMENT_DOCUMENT_LINK_KEY])).toEqual([
      expect.objectContaining({ setting: 'DOCUMENT_LINK_KEYS' }),
    ]);
  });
});
