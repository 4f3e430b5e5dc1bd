import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../db/schema';
import type { PersonalDataKeys } from '../personal-data/keys';

/**
 * Where document bytes live. Metadata is always in the `documents` table; an S3-compatible bucket
 * implements the same two calls.
 */
export interface DocumentStore {
  put(documentId: string, bytes: Buffer): Promise<void>;
  get(documentId: string): Promise<Buffer | undefined>;
  /** Destroys the bytes (an erased lead's documents); bytes already gone are no error. */
  remove(documentIds: readonly string[]): Promise<void>;
}

/**
 * What a store holds for a document: `LLDOC1`, the subject key's id (16 characters), then the IV, the
 * GCM tag and the ciphertext of the bytes, sealed under the key of the lead who sent it for the UTC day
 * it came (the key that seals that day's messages on the log), with the document id as associated data.
 * Erasing the lead, or the account's retention passing that day, destroys the key, and the bytes with
 * it, wherever a copy (a backup, a replica) went.
 */
const SEALED_DOCUMENT = Buffer.from('LLDOC1', 'latin1');

/**
 * Seals each document's bytes under its lead's key before `inner` stores them, and opens them on the
 * way back; a document whose lead was erased reads as missing. The lead comes from the document's row
 * in `documents`, which is written first. Bytes stored before sealing existed are returned as they are.
 */
function sealedDocumentStore(
  inner: DocumentStore,
  db: Kysely<Database>,
  keys: PersonalDataKeys,
): DocumentStore {
  return {
    async put(documentId, bytes) {
      const { account_id, phone, created_at } = await db
        .selectFrom('documents')
        .select(['account_id', 'phone', 'created_at'])
        .where('id', '=', documentId)
        .executeTakeFirstOrThrow();
      const subject = keys.subjectOf(account_id, 'lead', phone);
      // A document is the conversation's content: under the lead's key for the UTC day it came, which
      // the account's retention destroys with that day's messages.
      const period = created_at.toISOString().slice(0, 10);
      const key = (await keys.sealingKeys(account_id, [subject], period)).get(subject)!;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key.key!, iv);
      cipher.setAAD(Buffer.from(documentId, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(bytes), cipher.final()]);
      const header = Buffer.concat([SEALED_DOCUMENT, Buffer.from(key.keyId, 'latin1')]);
      await inner.put(documentId, Buffer.concat([header, iv, cipher.getAuthTag(), ciphertext]));
    },
    async get(documentId) {
      const stored = await inner.get(documentId);
      if (!stored || !stored.subarray(0, SEALED_DOCUMENT.length).equals(SEALED_DOCUMENT)) return stored;
      const keyId = stored.subarray(SEALED_DOCUMENT.length, SEALED_DOCUMENT.length + 16).toString('latin1');
      const key = (await keys.openingKeys([keyId])).get(keyId);
      if (!key?.key) return undefined;
      const at = SEALED_DOCUMENT.length + 16;
      const decipher = createDecipheriv('aes-256-gcm', key.key, stored.subarray(at, at + 12));
      decipher.setAAD(Buffer.from(documentId, 'utf8'));
      decipher.setAuthTag(stored.subarray(at + 12, at + 28));
      return Buffer.concat([decipher.update(stored.subarray(at + 28)), decipher.final()]);
    },
    remove: (documentIds) => inner.remove(documentIds),
  };
}

/** Files named by document id under one directory (the default: one machine needs nothing else). */
export function createDirectoryDocumentStore(
  directory: string,
  db: Kysely<Database>,
  keys: PersonalDataKeys,
): DocumentStore {
  return sealedDocumentStore(createFileStore(directory), db, keys);
}

function createFileStore(directory: string): DocumentStore {
  const fileOf = (documentId: string) => path.join(directory, documentId.replace(/[^A-Za-z0-9-]/g, '_'));
  return {
    async put(documentId, bytes) {
      await mkdir(directory, { recursive: true });
      await writeFile(fileOf(documentId), bytes);
    },
    async get(documentId) {
      try {
        return await readFile(fileOf(documentId));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async remove(documentIds) {
      for (const documentId of documentIds) await rm(fileOf(documentId), { force: true });
    },
  };
}

/** The bytes in the documents row itself (its metadata must be inserted first). */
export function createPostgresDocumentStore(db: Kysely<Database>, keys: PersonalDataKeys): DocumentStore {
  return sealedDocumentStore(createRowStore(db), db, keys);
}

function createRowStore(db: Kysely<Database>): DocumentStore {
  return {
    async put(documentId, bytes) {
      await db.updateTable('documents').set({ bytes }).where('id', '=', documentId).execute();
    },
    async get(documentId) {
      const row = await db
        .selectFrom('documents')
        .select('bytes')
        .where('id', '=', documentId)
        .executeTakeFirst();
      return row?.bytes ?? undefined;
    },
    async remove(documentIds) {
      if (documentIds.length === 0) return;
      await db.updateTable('documents').set({ bytes: null }).where('id', 'in', documentIds).execute();
    },
  };
}

/** Settings of every process that reads or writes document bytes; spread into a service's config. */
export const documentStoreConfig = {
  DOCUMENT_STORE: z.enum(['directory', 'postgres']).default('directory'),
  DOCUMENT_DIRECTORY: z.string().default('data/documents'),
};

export function createDocumentStore(
  config: { DOCUMENT_STORE: 'directory' | 'postgres'; DOCUMENT_DIRECTORY: string },
  db: Kysely<Database>,
  keys: PersonalDataKeys,
): DocumentStore {
  return config.DOCUMENT_STORE === 'postgres'
    ? createPostgresDocumentStore(db, keys)
    : createDirectoryDocumentStore(config.DOCUMENT_DIRECTORY, db, keys);
}
