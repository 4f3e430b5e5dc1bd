import { eventCatalog } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { projections } from './projections';

describe('the projections', () => {
  it('handle each event type in exactly one projection, so applying a batch projection by projection keeps log order', () => {
    // Each projection applies its events in log order (runs of one type). Projections meet only on
    // the account row (created first, by the first projection) and on counters they increment,
    // which commute: with one projection per type, no event is applied out of order with respect to
    // any other event that touches the same rows.
    // The one exception is the sequences projection: it also follows lead, message and opt-out events,
    // but writes only its own tables (and the account's `active_sequences`, counted from them), rows no
    // other projection reads or writes, so its order relative to the others does not matter.
    for (const definition of eventCatalog) {
      const owners = projections
        .filter((projection) => projection.handles.has(definition.type))
        .map((projection) => projection.name)
        .filter((name) => name !== 'sequences');
      expect(owners.length, definition.type).toBeLessThanOrEqual(1);
    }
    expect(projections[0]!.name).toBe('accounts');
  });
});
