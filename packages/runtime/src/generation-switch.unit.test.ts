import { describe, expect, it } from 'vitest';
import { drained, endLimits, limitKey } from './generation-switch';
import type { LogGeneration } from './log-generations';

const draining: LogGeneration = {
  generation: 1,
  partitions: { account: 2, partner: 1 },
  state: 'draining',
  transform: 'identity',
  startOffsets: null,
  endOffsets: {
    'p.leadline.account-events': ['5', '0'],
    'p.leadline.partner-events': ['2'],
  },
};
const accountOnly = { prefix: 'p.', kinds: ['account' as const] };
const both = { prefix: 'p.', kinds: ['account' as const, 'partner' as const] };
const at = (entries: [string, number, bigint][]) =>
  new Map(entries.map(([topic, partition, offset]) => [limitKey(topic, partition), offset]));

describe('a consumer leaving a generation', () => {
  it('applies nothing past its end, on the topics it reads', () => {
    expect(endLimits(draining, accountOnly)).toEqual(
      at([
        ['p.leadline.account-events', 0, 5n],
        ['p.leadline.account-events', 1, 0n],
      ]),
    );
  });

  it('has drained it once every partition with records is read to its end (an empty one needs no checkpoint)', () => {
    expect(drained(draining, accountOnly, at([['p.leadline.account-events', 0, 5n]]))).toBe(true);
    expect(drained(draining, accountOnly, at([['p.leadline.account-events', 0, 4n]]))).toBe(false);
    expect(drained(draining, both, at([['p.leadline.account-events', 0, 5n]]))).toBe(false);
    expect(
      drained(
        draining,
        both,
        at([
          ['p.leadline.account-events', 0, 5n],
          ['p.leadline.partner-events', 0, 2n],
        ]),
      ),
    ).toBe(true);
    // A generation that has not stopped taking writes is never drained.
    expect(drained({ ...draining, state: 'active', endOffsets: null }, accountOnly, new Map())).toBe(false);
  });
});
