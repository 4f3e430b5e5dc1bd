/** A billing period: a UTC calendar month. */
export interface Period {
  /** `YYYY-MM` */
  name: string;
  start: Date;
  end: Date;
}

const monthOf = (year: number, monthIndex: number): Period => {
  const start = new Date(Date.UTC(year, monthIndex, 1));
  const end = new Date(Date.UTC(year, monthIndex + 1, 1));
  return { name: start.toISOString().slice(0, 7), start, end };
};

/** `current`, `previous` or `YYYY-MM`, relative to `now` (UTC). */
export function resolvePeriod(period: string, now: Date): Period {
  if (period === 'current') return monthOf(now.getUTCFullYear(), now.getUTCMonth());
  if (period === 'previous') return monthOf(now.getUTCFullYear(), now.getUTCMonth() - 1);
  const [year, month] = period.split('-').map(Number);
  return monthOf(year!, month! - 1);
}
