import { ConfigError } from './config';
import { DEVELOPMENT_DOCUMENT_LINK_KEY } from './documents/links';
import { DEVELOPMENT_WEBHOOK_KEY } from './secret-box';

/** A setting that leaves a door open: fine on a laptop, never in production. */
export interface UnsafeSetting {
  setting: string;
  risk: string;
}

/**
 * With NODE_ENV=production a service with any unsafe setting refuses to start (ConfigError naming
 * each setting); elsewhere it says so once, loudly, at start-up.
 */
export function guardUnsafeSettings(
  service: string,
  nodeEnv: string | undefined,
  unsafe: UnsafeSetting[],
  warn: (message: string) => void = console.warn,
): void {
  if (unsafe.length === 0) return;
  const lines = unsafe.map(({ setting, risk }) => `  ${setting}: ${risk}`).join('\n');
  if (nodeEnv === 'production') {
    throw new ConfigError(`${service} refuses to start in production with unsafe settings:\n${lines}`);
  }
  warn(
    `\n*** WARNING: ${service} runs with unsafe settings, acceptable only for local development ` +
      `(NODE_ENV=production refuses them):\n${lines}\n`,
  );
}

/** The development key (used when none is set outside production) protects nothing, even as an old key. */
export function webhookKeyRisks(keys: readonly Buffer[]): UnsafeSetting[] {
  return keys.some((key) => key.equals(DEVELOPMENT_WEBHOOK_KEY))
    ? [
        {
          setting: 'WEBHOOK_ENCRYPTION_KEYS (or WEBHOOK_ENCRYPTION_KEY)',
          risk: 'is the public development key, so stored webhook secrets are readable by anyone',
        },
      ]
    : [];
}

/** The development link key (used when none is set outside production) lets anyone sign a link. */
export function documentLinkKeyRisks(keys: readonly Buffer[]): UnsafeSetting[] {
  return keys.some((key) => key.equals(DEVELOPMENT_DOCUMENT_LINK_KEY))
    ? [
        {
          setting: 'DOCUMENT_LINK_KEYS',
          risk: 'holds the public development key, so anyone can sign a link to any collected document',
        },
      ]
    : [];
}
