import {
  FetchFailedError,
  safeFetch,
  type Clock,
  type Database,
  type DocumentStore,
  type NewId,
} from '@leadline/runtime';
import { fileTypeFromBuffer } from 'file-type';
import type { Kysely } from 'kysely';
import { extractText, getDocumentProxy } from 'unpdf';
import type { Attachment } from './turn';

/** Twilio's own limit on an MMS is 5 MB; nothing larger is accepted. */
export const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 20_000;
const PDF_TEXT_CHARS = 20_000;
/** What may be stored and served back: types a browser renders without running script. */
const acceptedTypes = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
  'image/heic',
  'application/pdf',
]);

export interface MediaDeps {
  db: Kysely<Database>;
  documents: DocumentStore;
  clock: Clock;
  newId: NewId;
  allowPrivateTargets: boolean;
  /** Twilio serves media to the account's credentials when HTTP auth is on for media. */
  twilio?: { accountSid: string; authToken: string } | undefined;
}

export async function pdfText(bytes: Buffer): Promise<string | null> {
  try {
    const pdf = await getDocumentProxy(new Uint8Array(bytes));
    const { text } = await extractText(pdf, { mergePages: true });
    return text.trim().slice(0, PDF_TEXT_CHARS) || null;
  } catch {
    // Encrypted or damaged PDFs are kept as documents, without text.
    return null;
  }
}

/**
 * The attachments of an inbound burst, numbered from 1 in arrival order. Each medium is downloaded
 * once (by message id and position; a retried turn reuses it) through the SSRF guard, sniffed by its
 * bytes, size-limited and stored. Media that cannot be fetched or are of another type are left out.
 */
export async function loadAttachments(
  deps: MediaDeps,
  account: { id: string },
  messages: readonly {
    message_id: string;
    phone: string;
    media: { url: string; content_type: string | null }[];
  }[],
  onError: (error: unknown) => void,
): Promise<Attachment[]> {
  const attachments: Attachment[] = [];
  for (const message of messages) {
    for (const [index, medium] of message.media.entries()) {
      try {
        const stored = await storedOrFetched(deps, account, message, index, medium.url);
        if (stored)
          attachments.push({ ...stored, number: attachments.length + 1, message_id: message.message_id });
      } catch (error) {
        onError(error);
      }
    }
  }
  return attachments;
}

async function storedOrFetched(
  deps: MediaDeps,
  account: { id: string },
  message: { message_id: string; phone: string },
  index: number,
  url: string,
): Promise<Omit<Attachment, 'number' | 'message_id'> | undefined> {
  const existing = await deps.db
    .selectFrom('documents')
    .select(['id', 'content_type', 'file_size', 'text_content'])
    .where('message_id', '=', message.message_id)
    .where('media_index', '=', index)
    .executeTakeFirst();
  if (existing) {
    // A PDF's text is read again from its sealed bytes rather than kept in clear beside them (rows
    // from before sealing still have it).
    const stored = (await deps.documents.get(existing.id)) ?? null;
    const isPdf = existing.content_type === 'application/pdf';
    return {
      document_id: existing.id,
      content_type: existing.content_type,
      file_size: existing.file_size,
      text: existing.text_content ?? (isPdf && stored ? await pdfText(stored) : null),
      bytes: existing.content_type.startsWith('image/') ? stored : null,
    };
  }
  const target = new URL(url);
  const auth =
    deps.twilio && target.hostname.endsWith('twilio.com')
      ? `Basic ${Buffer.from(`${deps.twilio.accountSid}:${deps.twilio.authToken}`).toString('base64')}`
      : undefined;
  let body: Buffer;
  try {
    const response = await safeFetch(url, {
      allowPrivate: deps.allowPrivateTargets,
      timeoutMs: FETCH_TIMEOUT_MS,
      maxBytes: MAX_DOCUMENT_BYTES,
      ...(auth && { headers: { authorization: auth } }),
    });
    if (response.status !== 200) return undefined;
    body = response.body;
  } catch (error) {
    if (error instanceof FetchFailedError) return undefined;
    throw error;
  }
  const sniffed = await fileTypeFromBuffer(body);
  if (!sniffed || !acceptedTypes.has(sniffed.mime)) return undefined;
  const text = sniffed.mime === 'application/pdf' ? await pdfText(body) : null;
  const id = deps.newId();
  await deps.db
    .insertInto('documents')
    .values({
      id,
      account_id: account.id,
      phone: message.phone,
      message_id: message.message_id,
      media_index: index,
      content_type: sniffed.mime,
      file_size: body.length,
      // The text is personal data: it lives only in the sealed bytes.
      text_content: null,
      bytes: null,
      created_at: deps.clock.now(),
    })
    .onConflict((oc) => oc.columns(['message_id', 'media_index']).doNothing())
    .execute();
  const row = await deps.db
    .selectFrom('documents')
    .select('id')
    .where('message_id', '=', message.message_id)
    .where('media_index', '=', index)
    .executeTakeFirstOrThrow();
  await deps.documents.put(row.id, body);
  return {
    document_id: row.id,
    content_type: sniffed.mime,
    file_size: body.length,
    text,
    bytes: sniffed.mime.startsWith('image/') ? body : null,
  };
}
