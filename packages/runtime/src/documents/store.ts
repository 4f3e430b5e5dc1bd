import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../db/schema';

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

/** Files named by document id under one directory (the default: one machine needs nothing else). */
export function createDirectoryDocumentStore(directory: string): DocumentStore {
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
export function createPostgresDocumentStore(db: Kysely<Database>): DocumentStore {
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
): DocumentStore {
  return config.DOCUMENT_STORE === 'postgres'
    ? createPostgresDocumentStore(db)
    : createDirectoryDocumentStore(config.DOCUMENT_DIRECTORY);
}
