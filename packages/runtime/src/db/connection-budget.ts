import { ConfigError } from '../config';

/** One pool of a process and its claim on the process's connection budget. */
export interface PoolClaim {
  /** Connections this pool gets whatever the budget (a LISTEN connection cannot wait in a queue). */
  fixed?: number;
  /** Its part of what the fixed pools leave, against the other pools' parts. */
  share?: number;
}

/**
 * Splits a process's `DATABASE_MAX_CONNECTIONS` among its pools by one rule: the fixed pools get
 * their count, the others split the rest in proportion to their shares, rounding down, with what
 * rounding leaves going one by one to the pools in the order they are declared. Every shared pool
 * gets at least one connection; a budget too small for that is a refusal to start, naming the
 * smallest budget that works. The sum of the pools is never above the budget, so N instances of a
 * service never hold more than N times it.
 */
export function splitConnectionBudget<K extends string>(
  service: string,
  budget: number,
  claims: Record<K, PoolClaim>,
): Record<K, number> {
  const entries = Object.entries(claims) as [K, PoolClaim][];
  const fixed = entries.reduce((sum, [, claim]) => sum + (claim.fixed ?? 0), 0);
  const shared = entries.filter(([, claim]) => claim.fixed === undefined);
  const totalShares = shared.reduce((sum, [, claim]) => sum + (claim.share ?? 1), 0);
  const minimum = fixed + shared.length;
  if (!Number.isInteger(budget) || budget < minimum) {
    throw new ConfigError(
      `Invalid configuration:\n  DATABASE_MAX_CONNECTIONS: ${budget} is below the ${minimum} connections ` +
        `${service} needs at least (${entries.map(([name, claim]) => `${name} ${claim.fixed ?? '1+'}`).join(', ')})`,
    );
  }
  const rest = budget - fixed;
  const sizes = {} as Record<K, number>;
  let given = 0;
  for (const [name, claim] of entries) {
    sizes[name] =
      claim.fixed ?? Math.max(1, Math.floor((rest * (claim.share ?? 1)) / Math.max(totalShares, 1)));
    given += sizes[name];
  }
  for (let i = 0; given < budget && shared.length > 0; i = (i + 1) % shared.length, given++) {
    sizes[shared[i]![0]] += 1;
  }
  // Raising a pool to its one connection can take more than the proportional part: give it back
  // from the largest shared pools, so the sum stays the budget.
  while (given > budget) {
    const largest = shared.reduce((a, b) => (sizes[b[0]] > sizes[a[0]] ? b : a));
    sizes[largest[0]] -= 1;
    given -= 1;
  }
  return sizes;
}
