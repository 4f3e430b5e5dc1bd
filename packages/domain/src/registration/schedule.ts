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

/**
 * The backoff after failed calls to the provider (an outage, a 5xx, a timeout): from `baseMs`, doubling
 * to `maxMs`; the registration worker's retry policy applies it.
 */
export interface RetrySchedule {
  baseMs: number;
  maxMs: number;
}
