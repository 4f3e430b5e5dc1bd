/**
 * Wall-clock time in a time zone, with the platform's Intl data alone: the sending window reads the
 * lead's local time with it, the gateway the carriers' day (midnight Pacific).
 */

export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

// One formatter per zone: building an Intl.DateTimeFormat costs far more than formatting with it.
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string) {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  return format;
}

/** The wall-clock fields of an instant in a zone. */
export function wallClockAt(at: Date, zone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(at)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return parts as unknown as WallClock;
}

/** The zone's offset from UTC at an instant, in milliseconds. */
function offsetAt(at: Date, zone: string) {
  const p = wallClockAt(at, zone);
  return (
    Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - (at.getTime() - at.getMilliseconds())
  );
}

/**
 * The instant a local date and minute of the day happen in a zone (the later one when DST repeats
 * it). A day past the month's end rolls over, as `Date.UTC` does.
 */
export function zonedInstant(year: number, month: number, day: number, minutes: number, zone: string): Date {
  const guess = Date.UTC(year, month - 1, day, 0, minutes);
  // Read twice: the first guess may sit across a DST change.
  const first = guess - offsetAt(new Date(guess), zone);
  return new Date(guess - offsetAt(new Date(first), zone));
}
