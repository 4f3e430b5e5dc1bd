/** How often a step under review is looked at: soon after it was submitted, then less and less often. */
export interface CheckSchedule {
  minMs: number;
  maxMs: number;
}

/**
 * When to look again at a step the carrier has been reviewing since `since`: after half the time it has
 * been under review so far, between `minMs` and `maxMs`. A review of minutes is seen within minutes, one
 * of weeks costs a few dozen looks a day at most.
 */
export function nextCheckAt(since: Date, now: Date, schedule: CheckSchedule): Date {
  const waited = Math.max(0, now.getTime() - since.getTime());
  const delay = Math.min(schedule.maxMs, Math.max(schedule.minMs, waited / 2));
  return new Date(now.getTime() + delay);
}

/** Backoff after failed calls to the provider (an outage, a 5xx, a timeout): doubling, capped. */
export interface RetrySchedule {
  baseMs: number;
  maxMs: number;
}

/**
 * When to call again after `failures` calls in a row failed for a passing reason: the delay doubles
 * from `baseMs` up to `maxMs`, and half of it is spread at random (`random` in [0, 1)), so the
 * registrations an outage interrupted do not all come back at the same instant.
 */
export function retryAt(failures: number, now: Date, random: number, schedule: RetrySchedule): Date {
  const ceiling = Math.min(schedule.maxMs, schedule.baseMs * 2 ** Math.max(0, failures - 1));
  return new Date(now.getTime() + ceiling / 2 + (random * ceiling) / 2);
}
