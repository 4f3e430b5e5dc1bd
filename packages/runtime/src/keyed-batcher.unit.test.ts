import { describe, expect, it } from 'vitest';
import { createKeyedBatcher } from './keyed-batcher';

interface Item {
  key: string;
  subject: string;
  fail?: boolean;
}

/** A batcher whose runs are held until the test lets them go, recording what each run held. */
function heldBatcher(conflicts = (a: Item, b: Item) => a.subject === b.subject) {
  const runs: string[][] = [];
  const releases: (() => void)[] = [];
  const submit = createKeyedBatcher<Item, string>({
    keyOf: (item) => item.key,
    conflicts,
    maxBatch: 3,
    run: async (key, items) => {
      runs.push(items.map((item) => `${key}:${item.subject}`));
      await new Promise<void>((resolve) => releases.push(resolve));
      if (items.some((item) => item.fail)) throw new Error('refused');
      return items.map((item) => `done ${item.subject}`);
    },
  });
  /** Lets every run go, the ones each started included, until none is held. */
  const releaseAll = async () => {
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { submit, runs, releaseAll };
}

describe('group commit by key', () => {
  it('runs what arrives while a key is busy together in its next run, each key on its own', async () => {
    const { submit, runs, releaseAll } = heldBatcher();
    const results = [
      submit({ key: 'a', subject: '1' }),
      submit({ key: 'b', subject: '1' }),
      submit({ key: 'a', subject: '2' }),
      submit({ key: 'a', subject: '3' }),
      submit({ key: 'a', subject: '4' }),
      submit({ key: 'a', subject: '5' }),
    ];
    await releaseAll();
    expect(await Promise.all(results)).toEqual(['done 1', 'done 1', 'done 2', 'done 3', 'done 4', 'done 5']);
    // The first of each key goes at once; the four that waited on `a` go three (the most) and one.
    expect(runs).toEqual([['a:1'], ['b:1'], ['a:2', 'a:3', 'a:4'], ['a:5']]);
  });

  it('keeps items that conflict apart and in order, letting others go ahead', async () => {
    const { submit, runs, releaseAll } = heldBatcher();
    const results = [
      submit({ key: 'a', subject: 'busy' }),
      submit({ key: 'a', subject: 'x' }),
      submit({ key: 'a', subject: 'x' }),
      submit({ key: 'a', subject: 'y' }),
    ];
    await releaseAll();
    await Promise.all(results);
    expect(runs).toEqual([['a:busy'], ['a:x', 'a:y'], ['a:x']]);
  });

  it('keeps an item behind one it conflicts with that is left for later', async () => {
    // Subjects conflict when they share a letter: "cd" conflicts with "bc" only, which "ab" holds back.
    const { submit, runs, releaseAll } = heldBatcher((a, b) =>
      [...a.subject].some((c) => b.subject.includes(c)),
    );
    const results = [
      submit({ key: 'a', subject: 'xy' }),
      submit({ key: 'a', subject: 'ab' }),
      submit({ key: 'a', subject: 'bc' }),
      submit({ key: 'a', subject: 'cd' }),
    ];
    await releaseAll();
    await Promise.all(results);
    expect(runs).toEqual([['a:xy'], ['a:ab'], ['a:bc'], ['a:cd']]);
  });

  it('fails every item of a failed run with its error, trying none again, and goes on with the next', async () => {
    const { submit, runs, releaseAll } = heldBatcher();
    const first = submit({ key: 'a', subject: 'first' });
    const good = submit({ key: 'a', subject: 'good' }).catch((error: Error) => error.message);
    const bad = submit({ key: 'a', subject: 'bad', fail: true }).catch((error: Error) => error.message);
    await releaseAll();
    expect(await first).toBe('done first');
    expect(await good).toBe('refused');
    expect(await bad).toBe('refused');
    expect(runs).toEqual([['a:first'], ['a:good', 'a:bad']]);
    // The key is free again: the next item runs.
    const next = submit({ key: 'a', subject: 'next' });
    await releaseAll();
    expect(await next).toBe('done next');
  });
});
