import { useState } from 'react';
import { useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { leadsFromCsv } from '../../lib/csv';

export type ImportReport = Omit<Schemas['BulkImportResult'], 'success'>;

/** The bulk import's outcome, with each refused row by its line in the file (the header is line 1). */
export function ImportResult({ report }: { report: ImportReport }) {
  return (
    <div className="import-result" role="status">
      <p>
        {report.imported} imported, {report.updated} updated, {report.skipped} unchanged
        {report.errors.length > 0 && `, ${report.errors.length} refused`}.
      </p>
      {report.errors.length > 0 && (
        <table className="errors" aria-label="Rows not imported">
          <thead>
            <tr>
              <th>Line</th>
              <th>Phone</th>
              <th>Problem</th>
            </tr>
          </thead>
          <tbody>
            {report.errors.map((error) => (
              <tr key={error.index}>
                <td>{error.index + 2}</td>
                <td>{error.phone ?? ''}</td>
                <td>{error.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Imports a CSV file through the bulk import; `onReport(null)` when a new import starts. */
export function Importer({ onReport }: { onReport: (report: ImportReport | null) => void }) {
  const { api, session } = useDashboard();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const importFile = async (file: File) => {
    onReport(null);
    setError(null);
    const parsed = leadsFromCsv(await file.text());
    if (parsed.error) return setError(parsed.error);
    if (parsed.leads.length === 0) return setError('The file has no rows to import.');
    setBusy(true);
    try {
      const report = await api.POST('/accounts/{id}/leads/bulk', {
        params: { path: { id: session.account.id } },
        // Rows go as the file has them, one without a phone too: the import refuses each bad row on
        // its own, by its index, which the result shows as the row's line.
        body: { leads: parsed.leads as Schemas['LeadImport'][] },
      });
      onReport(dataOf(report));
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="importer">
      <label className="button secondary">
        {busy ? 'Importing…' : 'Import CSV'}
        <input
          type="file"
          accept=".csv,text/csv"
          aria-label="Import CSV"
          hidden
          onChange={(event) => {
            const file = event.target.files?.[0];
            event.target.value = '';
            if (file) void importFile(file);
          }}
        />
      </label>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
