import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { dataOf, type Schemas } from '../lib/api';
import { useLiveChanges } from '../lib/live-context';
import { ImportResult, Importer, type ImportReport } from './leads/Importer';
import { LeadPanel } from './leads/LeadPanel';
import { LeadFilters, LeadPager, LeadTable, type LeadFilter } from './leads/LeadTable';

const PAGE_SIZE = 25;

/** The account's leads: filtered and paged, a CSV import, and one lead's details beside the list. */
export function Leads() {
  const { api, session } = useDashboard();
  const canImport = useCan('manage_leads');
  const [filters, setFilters] = useState<LeadFilter>({ status: '', source: '', search: '' });
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<{ leads: Schemas['Lead'][]; total: number }>({ leads: [], total: 0 });
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [report, setReport] = useState<ImportReport | null>(null);

  const load = useCallback(async () => {
    const result = await api.GET('/accounts/{id}/leads', {
      params: {
        path: { id: session.account.id },
        // An empty filter is no filter.
        query: {
          status: filters.status || undefined,
          source: filters.source || undefined,
          search: filters.search || undefined,
          limit: PAGE_SIZE,
          offset,
        },
      },
    });
    setPage(dataOf(result));
    setError(null);
  }, [api, filters, offset, session.account.id]);

  useEffect(() => {
    const timer = setTimeout(() => void load().catch((failure: Error) => setError(failure.message)), 150);
    return () => clearTimeout(timer);
  }, [load]);
  useLiveChanges((changes) => {
    if (changes.resync || changes.leads.length > 0) void load().catch(() => undefined);
  });

  const filter = (change: Partial<LeadFilter>) => {
    setOffset(0);
    setFilters((current) => ({ ...current, ...change }));
  };

  return (
    <div className="split">
      <section className="table-pane">
        <LeadFilters filters={filters} onChange={filter}>
          {canImport && (
            <Importer
              onReport={(next) => {
                setReport(next);
                if (next) void load();
              }}
            />
          )}
        </LeadFilters>
        {report && <ImportResult report={report} />}
        {error && <p className="error">{error}</p>}
        <LeadTable leads={page.leads} selected={selected} onSelect={setSelected} />
        <LeadPager offset={offset} total={page.total} pageSize={PAGE_SIZE} onOffset={setOffset} />
      </section>
      {selected && (
        <LeadPanel
          key={selected}
          phone={selected}
          onChanged={() => void load()}
          onClose={() => setSelected(null)}
          onDeleted={() => {
            setSelected(null);
            void load();
          }}
        />
      )}
    </div>
  );
}
