/** Columns a CSV may have, as the bulk import names them; others are ignored. */
export const LEAD_COLUMNS = [
  'phone',
  'name',
  'first_name',
  'last_name',
  'email',
  'company',
  'notes',
  'source',
  'external_id',
  'property_address',
] as const;

export const MAX_IMPORT_ROWS = 1000;

/** RFC 4180 rows: quoted fields may hold commas, doubled quotes and line breaks. */
export function parseCsvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const input = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < input.length; i++) {
    const char = input[i]!;
    if (quoted) {
      if (char === '"' && input[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && input[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += char;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((cells) => cells.some((cell) => cell.trim() !== ''));
}

const normalizeHeader = (header: string) =>
  header
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

export type CsvLead = Partial<Record<(typeof LEAD_COLUMNS)[number], string>>;

export interface ParsedLeads {
  leads: CsvLead[];
  /** Header cells that are not lead fields. */
  ignoredColumns: string[];
  error?: string;
}

/** A CSV file with a header row as bulk-import entries; empty cells are left out. */
export function leadsFromCsv(text: string): ParsedLeads {
  const [header, ...rows] = parseCsvRows(text);
  if (!header) return { leads: [], ignoredColumns: [], error: 'The file is empty.' };
  const columns = header.map(normalizeHeader);
  if (!columns.includes('phone')) {
    return {
      leads: [],
      ignoredColumns: [],
      error: 'The first row must name the columns, with a "phone" column.',
    };
  }
  if (rows.length > MAX_IMPORT_ROWS) {
    return {
      leads: [],
      ignoredColumns: [],
      error: `At most ${MAX_IMPORT_ROWS} rows can be imported at once.`,
    };
  }
  const known = new Set<string>(LEAD_COLUMNS);
  const leads = rows.map((cells) => {
    const lead: CsvLead = {};
    columns.forEach((column, index) => {
      const value = cells[index]?.trim();
      if (known.has(column) && value) lead[column as keyof CsvLead] = value;
    });
    return lead;
  });
  const ignoredColumns = header.filter((_, index) => !known.has(columns[index]!));
  return { leads, ignoredColumns };
}
