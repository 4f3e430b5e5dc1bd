import type { SendingWindow } from '@leadline/runtime';
import areaCodes from './area-codes.json' with { type: 'json' };

export type { SendingWindow };

/** The federal TCPA window (47 CFR 64.1200(c)(1)), in the lead's zone; New York when nothing says otherwise. */
export const DEFAULT_SENDING_WINDOW: SendingWindow = {
  enabled: true,
  start: '08:00',
  end: '21:00',
  time_zone: 'America/New_York',
};

/**
 * States whose law is stricter than the federal window, presumed from the area code as those states'
 * laws do: Florida (Fla. Stat. § 501.059), Oklahoma (15 O.S. § 775C.4), Maryland, Washington
 * (RCW 19.158.040) 08:00-20:00, Connecticut 09:00-20:00. An account's window is narrowed to these.
 */
export const stateWindows: Readonly<Record<string, { start: string; end: string }>> = {
  FL: { start: '08:00', end: '20:00' },
  OK: { start: '08:00', end: '20:00' },
  MD: { start: '08:00', end: '20:00' },
  WA: { start: '08:00', end: '20:00' },
  CT: { start: '09:00', end: '20:00' },
};

/** Where a lead is presumed to be: every zone its area code spans, and its state when known. */
export interface LeadLocation {
  zones: string[];
  state: string | null;
}

const table = areaCodes as Record<string, { zones: string[]; state?: string }>;

/**
 * The lead's zones and state from a North American number's area code (Google's libphonenumber data,
 * generated into area-codes.json). Anything else (another country, a non-geographic code) falls back
 * to the account's zone.
 */
export function leadLocation(phone: string, fallbackZone: string): LeadLocation {
  const entry = phone.startsWith('+1') ? table[phone.slice(2, 5)] : undefined;
  if (!entry) return { zones: [fallbackZone], state: null };
  return { zones: entry.zones, state: entry.state ?? null };
}

const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));

/** The window that applies to this lead: the account's, narrowed by the lead's state. */
export function effectiveWindow(window: SendingWindow, location: LeadLocation) {
  const state = location.state ? stateWindows[location.state] : undefined;
  const start = Math.max(minutesOf(window.start), state ? minutesOf(state.start) : 0);
  const end = Math.min(minutesOf(window.end), state ? minutesOf(state.end) : 24 * 60);
  return { start, end };
}

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
function localParts(at: Date, zone: string) {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(at)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return parts as { year: number; month: number; day: number; hour: number; minute: number; second: number };
}

/** The zone's offset from UTC at an instant, in milliseconds. */
function offsetAt(at: Date, zone: string) {
  const p = localParts(at, zone);
  return (
    Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - (at.getTime() - at.getMilliseconds())
  );
}

/** The instant a local date and minute-of-day happen in a zone (the later one when DST repeats it). */
function instantOf(year: number, month: number, day: number, minutes: number, zone: string): Date {
  const guess = Date.UTC(year, month - 1, day, 0, minutes);
  const first = guess - offsetAt(new Date(guess), zone);
  return new Date(guess - offsetAt(new Date(first), zone));
}

function inside(at: Date, zone: string, window: { start: number; end: number }) {
  const p = localParts(at, zone);
  const minute = p.hour * 60 + p.minute;
  return minute >= window.start && minute < window.end;
}

/** The next time the window opens in a zone, strictly after `at` is outside it. */
function nextOpening(at: Date, zone: string, window: { start: number; end: number }): Date {
  const p = localParts(at, zone);
  const today = instantOf(p.year, p.month, p.day, window.start, zone);
  if (today.getTime() > at.getTime()) return today;
  // Past today's end: tomorrow's start (noon UTC of the next local day avoids DST edges).
  const tomorrow = localParts(new Date(Date.UTC(p.year, p.month - 1, p.day + 1, 12)), 'UTC');
  return instantOf(tomorrow.year, tomorrow.month, tomorrow.day, window.start, zone);
}

/**
 * The earliest instant at or after `at` that is inside the sending window in every zone the lead may
 * be in (a number whose area code spans two zones gets the intersection). With the window disabled,
 * `at` itself. A window empty for this lead (its state's hours exclude all of the account's) never
 * opens: null.
 */
export function nextSendTime(at: Date, window: SendingWindow, location: LeadLocation): Date | null {
  if (!window.enabled) return at;
  const allowed = effectiveWindow(window, location);
  if (allowed.start >= allowed.end) return null;
  let candidate = at;
  // Each pass moves to a zone's next opening; zones a few hours apart agree within a few passes.
  for (let pass = 0; pass < 16; pass++) {
    const closed = location.zones.find((zone) => !inside(candidate, zone, allowed));
    if (!closed) return candidate;
    candidate = nextOpening(candidate, closed, allowed);
  }
  return null;
}
