import type { DomainEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { segmentsInLogOrder } from './apply-batch';
import { projections } from './projections';

const event = (type: string, n: number) => ({ type, data: { n } }) as unknown as DomainEvent;
const names = (segments: ReturnType<typeof segmentsInLogOrder>) =>
  segments.map((segment) => ({
    projections: segment.projections.map((projection) => projection.name),
    events: segment.events.map((entry) => `${entry.type}#${(entry.data as { n: number }).n}`),
  }));

describe('applying a batch', () => {
  it('goes in log order across projections: an item collected, then the lead deleted', () => {
    const batch = [
      event('lead.created', 1),
      event('checklist.item_collected', 2),
      event('lead.updated', 3),
      event('lead.deleted', 4),
      event('checklist.item_collected', 5),
    ];
    expect(names(segmentsInLogOrder(projections, batch))).toEqual([
      { projections: ['leads', 'suppressions'], events: ['lead.created#1'] },
      { projections: ['checklist'], events: ['checklist.item_collected#2'] },
      { projections: ['leads'], events: ['lead.updated#3'] },
      { projections: ['leads', 'sequences'], events: ['lead.deleted#4'] },
      { projections: ['checklist'], events: ['checklist.item_collected#5'] },
    ]);
  });

  it('keeps a bulk import one run, so each projection writes it with one statement', () => {
    const batch = Array.from({ length: 1000 }, (_, n) => event('lead.created', n));
    const segments = segmentsInLogOrder(projections, batch);
    expect(segments).toHaveLength(1);
    expect(segments[0]!.events).toHaveLength(1000);
  });

  it('skips events no projection handles, and gives accounts its runs first', () => {
    const batch = [event('no.such_type', 1), event('account.created', 2)];
    expect(names(segmentsInLogOrder(projections, batch))).toEqual([
      { projections: ['accounts'], events: ['account.created#2'] },
    ]);
    expect(projections[0]!.name).toBe('accounts');
  });
});
