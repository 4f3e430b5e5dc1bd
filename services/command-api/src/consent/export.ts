import { pipeline, Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { ConsentRecord } from './queries';

/** The CSV columns, in order: a record flattened, its message as three columns. */
const csvColumns = [
  'id',
  'phone',
  'lead_name',
  'action',
  'method',
  'captured_at',
  'recorded_at',
  'recorded_via',
  'recorded_by',
  'source_url',
  'ip_address',
  'disclosure_text',
  'evidence_url',
  'keyword',
  'message_id',
  'message_body',
  'message_received_at',
] as const;

/**
 * Text that others wrote (a lead's message, a disclosure, a name) could start like a spreadsheet
 * formula and run when the file is opened: such a value gets a leading `'`, as OWASP advises for CSV
 * injection. The NDJSON export carries every value untouched.
 */
const neutralized = (value: string | null) =>
  value !== null && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;

function csvRow(record: ConsentRecord): Record<(typeof csvColumns)[number], string | null> {
  return {
    id: record.id,
    phone: record.phone,
    lead_name: neutralized(record.lead_name),
    action: record.action,
    method: record.method,
    captured_at: record.captured_at,
    recorded_at: record.recorded_at,
    recorded_via: record.recorded_via,
    recorded_by: neutralized(record.recorded_by),
    source_url: neutralized(record.source_url),
    ip_address: record.ip_address,
    disclosure_text: neutralized(record.disclosure_text),
    evidence_url: neutralized(record.evidence_url),
    keyword: record.keyword,
    message_id: record.message?.id ?? null,
    message_body: neutralized(record.message?.body ?? null),
    message_received_at: record.message?.received_at ?? null,
  };
}

async function* recordsOf(pages: AsyncIterable<ConsentRecord[]>) {
  for await (const page of pages) yield* page;
}

/**
 * The export as a stream that reads the next page only when the client has taken what came before
 * (a readable's pull): memory holds a page and the stream's small buffers, whatever the export's size.
 * A client that goes away ends the stream, and with it the queries.
 */
export function exportStream(pages: AsyncIterable<ConsentRecord[]>, format: 'ndjson' | 'csv'): Readable {
  if (format === 'ndjson') {
    return Readable.from(
      (async function* () {
        for await (const record of recordsOf(pages)) yield `${JSON.stringify(record)}\n`;
      })(),
    );
  }
  const rows = Readable.from(
    (async function* () {
      for await (const record of recordsOf(pages)) yield csvRow(record);
    })(),
  );
  const csv = stringify({ header: true, columns: [...csvColumns], record_delimiter: 'windows' });
  // Either end going (an error reading a page, the client gone) ends the other; the answer is then cut
  // short (its headers are sent), which the client sees as a connection closed before the end.
  return pipeline(rows, csv, () => undefined);
}
