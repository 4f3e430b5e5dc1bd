import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config';
import { splitConnectionBudget } from './connection-budget';

describe('a connection budget', () => {
  it('gives the fixed pools their count and splits the rest by share, the first pool taking the remainder', () => {
    const pools = {
      listening: { fixed: 2 },
      numbers: { fixed: 1 },
      commands: { share: 1 },
      reads: { share: 1 },
    };
    expect(splitConnectionBudget('api', 10, pools)).toEqual({
      listening: 2,
      numbers: 1,
      commands: 4,
      reads: 3,
    });
    expect(splitConnectionBudget('api', 30, pools)).toEqual({
      listening: 2,
      numbers: 1,
      commands: 14,
      reads: 13,
    });
    expect(splitConnectionBudget('relay', 12, { listening: { fixed: 3 }, relay: { share: 1 } })).toEqual({
      listening: 3,
      relay: 9,
    });
    expect(splitConnectionBudget('w', 9, { a: { share: 2 }, b: { share: 1 } })).toEqual({ a: 6, b: 3 });
  });

  it('never sums above the budget, and every shared pool gets one connection at least', () => {
    const pools = { listening: { fixed: 2 }, a: { share: 5 }, b: { share: 1 }, c: { share: 1 } };
    for (let budget = 5; budget <= 40; budget++) {
      const sizes = splitConnectionBudget('w', budget, pools);
      expect(sizes.listening + sizes.a + sizes.b + sizes.c).toBe(budget);
      expect(Math.min(sizes.a, sizes.b, sizes.c)).toBeGreaterThanOrEqual(1);
    }
  });

  it('refuses a budget below the fixed pools and one connection for each other, naming the setting', () => {
    const pools = { listening: { fixed: 2 }, commands: { share: 1 }, outbox: { share: 1 } };
    expect(() => splitConnectionBudget('sms-gateway', 3, pools)).toThrow(ConfigError);
    expect(() => splitConnectionBudget('sms-gateway', 3, pools)).toThrow(
      /DATABASE_MAX_CONNECTIONS: 3 is below the 4 connections sms-gateway needs/,
    );
    expect(splitConnectionBudget('sms-gateway', 4, pools)).toEqual({ listening: 2, commands: 1, outbox: 1 });
  });
});
