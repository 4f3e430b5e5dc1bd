import {
  createDocumentLinks,
  createPersonalDataKeys,
  createPostgresDocumentStore,
  personalDataKeySettings,
  DEVELOPMENT_DOCUMENT_LINK_KEY,
  systemClock,
  type Clock,
  type Database,
} from '@leadline/runtime';
import type { Kysely } from 'kysely';

/** The document store and signed links a test app needs, kept in the test's own database. */
export function testDocuments(
  db: Kysely<Database>,
  publicUrl = 'http://127.0.0.1:8080',
  clock: Clock = systemClock,
) {
  return {
    documentLinks: createDocumentLinks({ publicUrl, keys: [DEVELOPMENT_DOCUMENT_LINK_KEY], clock }),
    // The development keys, as every process of the tests uses.
    documents: createPostgresDocumentStore(
      db,
      createPersonalDataKeys(db, personalDataKeySettings({ PERSONAL_DATA_KEYS: [] })),
    ),
  };
}
