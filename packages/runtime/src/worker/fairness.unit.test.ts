import { describe, expect, it } from 'vitest';
import { claimRoom, heldPerKey, pickStartable, type FairnessPolicy } from './fairness';
import { fitsLease, idleWaitMs } from './lease';

interface Item {
  id: string;
  key: string;
}
const item = (id: string): Item => ({ id, key: id[0]! });
const perKey = (limit: number): FairnessPolicy<Item> => ({ keyOf: (it) => it.key, perKey: limit });
const ids = (waiting: Item[], picked: number[]) => picked.map((index) => waiting[index]!.id);

describe('fair selection', () => {
  it('one at a time per key starts the oldest item of each free key, in claim order', () => {
    const waiting = ['a1', 'a2', 'b1', 'c1', 'b2'].map(item);
    expect(ids(waiting, pickStartable(waiting, new Map(), 10, perKey(1)))).toEqual(['a1', 'b1', 'c1']);
    // A key already running here starts nothing more; later keys still do.
    expect(ids(waiting, pickStartable(waiting, new Map([['a', 1]]), 10, perKey(1)))).toEqual(['b1', 'c1']);
  });

  it('never lets an item overtake an earlier one of its key, even when a slot is free', () => {
    const waiting = ['a1', 'b1', 'a2'].map(item);
    expect(ids(waiting, pickStartable(waiting, new Map([['a', 1]]), 3, perKey(2)))).toEqual(['a1', 'b1']);
  });

  it('a per-endpoint limit of two leaves the other slots to other endpoints', () => {
    const waiting = ['h1', 'h2', 'h3', 'h4', 'g1', 'g2'].map(item);
    expect(ids(waiting, pickStartable(waiting, new Map(), 4, perKey(2)))).toEqual(['h1', 'h2', 'g1', 'g2']);
    expect(ids(waiting, pickStartable(waiting, new Map(), 3, perKey(2)))).toEqual(['h1', 'h2', 'g1']);
  });

  it('counts what a worker holds per key, running and waiting', () => {
    const held = heldPerKey(new Map([['a', 1]]), ['a2', 'b1', 'b2'].map(item), perKey(1));
    expect(Object.fromEntries(held)).toEqual({ a: 2, b: 2 });
  });

  it('claims ahead of the slots, in batches while items still wait', () => {
    expect(claimRoom({ concurrency: 4, prefetch: 12, running: 0, waiting: 0 })).toBe(16);
    expect(claimRoom({ concurrency: 4, prefetch: 12, running: 4, waiting: 10 })).toBe(0);
    expect(claimRoom({ concurrency: 4, prefetch: 12, running: 4, waiting: 9 })).toBe(3);
    expect(claimRoom({ concurrency: 4, prefetch: 0, running: 3, waiting: 0 })).toBe(1);
    expect(claimRoom({ concurrency: 4, prefetch: 0, running: 4, waiting: 0 })).toBe(0);
  });
});

describe('lease arithmetic', () => {
  const now = new Date('2026-03-08T10:00:00.000Z');
  const at = (ms: number) => new Date(now.getTime() + ms);

  it('starts an item only when its whole budget fits in what is left of its lease', () => {
    expect(fitsLease(at(10_000), now, 10_000)).toBe(true);
    expect(fitsLease(at(9999), now, 10_000)).toBe(false);
    expect(fitsLease(at(-1), now, 0)).toBe(false);
  });

  it('sleeps until the next item is due, at most the poll interval, and briefly for one leased elsewhere', () => {
    expect(idleWaitMs(null, now, 5000)).toBe(5000);
    expect(idleWaitMs(at(1200), now, 5000)).toBe(1200);
    expect(idleWaitMs(at(60_000), now, 5000)).toBe(5000);
    expect(idleWaitMs(at(-5), now, 5000)).toBe(200);
    expect(idleWaitMs(at(0), now, 100)).toBe(100);
  });
});
