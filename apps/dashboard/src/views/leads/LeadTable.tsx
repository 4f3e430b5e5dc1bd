import type { ReactNode } from 'react';
import type { Schemas } from '../../lib/api';
import { formatPhone, formatTime, percent } from '../../lib/format';
import { leadStatuses, type LeadStatus } from './statuses';

export interface LeadFilter {
  status: LeadStatus | '';
  source: string;
  search: string;
}

/** Search, status and source above the table; `children` go at its end (the import). */
export function LeadFilters({
  filters,
  onChange,
  children,
}: {
  filters: LeadFilter;
  onChange: (change: Partial<LeadFilter>) => void;
  children?: ReactNode;
}) {
  return (
    <div className="toolbar">
      <input
        type="search"
        aria-label="Search"
        placeholder="Search name, email or phone"
        value={filters.search}
        onChange={(event) => onChange({ search: event.target.value })}
      />
      <select
        aria-label="Status filter"
        value={filters.status}
        onChange={(event) => onChange({ status: event.target.value as LeadFilter['status'] })}
      >
        <option value="">All statuses</option>
        {leadStatuses.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
      <input
        aria-label="Source filter"
        placeholder="Source"
        value={filters.source}
        onChange={(event) => onChange({ source: event.target.value })}
      />
      {children}
    </div>
  );
}

/** One page of leads; a row opens the lead. */
export function LeadTable({
  leads,
  selected,
  onSelect,
}: {
  leads: Schemas['Lead'][];
  selected: string | null;
  onSelect: (phone: string) => void;
}) {
  return (
    <>
      <table className="leads" aria-label="Leads">
        <thead>
          <tr>
            <th>Name</th>
            <th>Phone</th>
            <th>Status</th>
            <th>Source</th>
            <th>Checklist</th>
            <th>Last message</th>
          </tr>
        </thead>
        <tbody>
          {leads.map((lead) => (
            <tr
              key={lead.phone}
              className={lead.phone === selected ? 'selected' : ''}
              onClick={() => onSelect(lead.phone)}
              data-phone={lead.phone}
            >
              <td>{lead.name ?? '—'}</td>
              <td>{formatPhone(lead.phone)}</td>
              <td>
                <span className={`status ${lead.status}`}>{lead.status}</span>
              </td>
              <td>{lead.source ?? ''}</td>
              <td>{percent(lead.checklist_progress)}</td>
              <td>{formatTime(lead.last_message_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {leads.length === 0 && <p className="empty">No leads.</p>}
    </>
  );
}

/** Where the page is in the list, and the way to the previous and next pages. */
export function LeadPager({
  offset,
  total,
  pageSize,
  onOffset,
}: {
  offset: number;
  total: number;
  pageSize: number;
  onOffset: (offset: number) => void;
}) {
  const last = Math.min(offset + pageSize, total);
  return (
    <div className="pager">
      <span>{total === 0 ? '0' : `${offset + 1}–${last} of ${total}`}</span>
      <button
        className="secondary"
        disabled={offset === 0}
        onClick={() => onOffset(Math.max(0, offset - pageSize))}
      >
        Previous
      </button>
      <button className="secondary" disabled={last >= total} onClick={() => onOffset(offset + pageSize)}>
        Next
      </button>
    </div>
  );
}
