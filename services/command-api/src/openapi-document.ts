import {
  createDb,
  createDocumentLinks,
  createPersonalDataKeys,
  createPostgresDocumentStore,
  personalDataKeySettings,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  DEVELOPMENT_DOCUMENT_LINK_KEY,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import type { CommandBus } from '@leadline/runtime';
import type { NumberProvider } from '@leadline/telephony';
import { buildApp } from './app';

/**
 * The OpenAPI document exactly as the API serves it, built without any infrastructure: building the
 * app registers routes and connects to nothing, so linters and client generators can run anywhere.
 */
export async function openApiDocument(publicUrl: string): Promise<object> {
  const db = createDb('postgres://127.0.0.1:1/unused');
  const personalDataKeys = createPersonalDataKeys(db, personalDataKeySettings({ PERSONAL_DATA_KEYS: [] }));
  const app = await buildApp({
    db,
    // Only the routes' schemas are read; no handler runs.
    commands: {} as CommandBus,
    numbers: {} as NumberProvider,
    clock: systemClock,
    newId: newUuid,
    publicUrl,
    rateLimitPerMinute: 600,
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    documentLinks: createDocumentLinks({
      publicUrl,
      keys: [DEVELOPMENT_DOCUMENT_LINK_KEY],
      clock: systemClock,
    }),
    documents: createPostgresDocumentStore(db, personalDataKeys),
    personalDataKeys,
  });
  try {
    await app.ready();
    return app.swagger();
  } finally {
    await app.close();
    await db.destroy();
  }
}
