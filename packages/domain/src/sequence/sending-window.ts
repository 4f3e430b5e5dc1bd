import areaCodes from './area-codes.json' with { type: 'json' };
import { wallClockAt, zonedInstant } from '../wall-clock';

/** An account's sending window for proactive messages, in the lead's local time. */
export interface SendingWindow {
  enabled: boolean;
  /** `HH:MM`, local to the lead. */
  start: string;
  end: string;
  /** IANA zone used when the lead's number says nothing of its zone. */
  time_zone: string;
}

/** The federal TCPA window (47 CFR 64.1200(c)(1)), in the lead's zone; New York when nothing says otherwise. */
export const DEFAULT_SENDING_WINDOW: SendingWindow = {
  enabled: true,
  start: '08:00',
  end: '21:00',
  time_zone: 'America/New_York',
};

/** Hours of a day, `HH:MM` local to the lead, the end excluded. */
export interface Hours {
  start: string;
  end: string;
}

/**
 * A state's law on proactive messages, beyond the federal window, presumed from the area code as those
 * states' laws do. Gathered from the statutes and compliance tables; where tables disagree the stricter
 * reading is kept.
 */
export interface StateRule {
  /** Hours every day, or Monday to Saturday when `saturday` or `sunday` say otherwise. */
  hours: Hours;
  saturday?: Hours;
  /** Sunday's hours; null when the state forbids solicitations on Sundays. */
  sunday?: Hours | null;
  /** No solicitations on the state's legal holidays (`stateHolidays`). */
  holidays?: true;
  /** At most this many proactive messages to one lead in any 24 hours. */
  dailyCap?: number;
  source: string;
}

export const stateRules: Readonly<Record<string, StateRule>> = {
  FL: {
    hours: { start: '08:00', end: '20:00' },
    // "More than three ... calls from any source to the same called party in a 24-hour period on the
    // same subject matter": our account's sequence messages to one lead are one subject.
    dailyCap: 3,
    source: 'Florida Telephone Solicitation Act, Fla. Stat. § 501.059(8)',
  },
  OK: {
    hours: { start: '08:00', end: '20:00' },
    dailyCap: 3,
    source: 'Oklahoma Telephone Solicitation Act, 15 O.S. § 775C.4',
  },
  MD: {
    hours: { start: '08:00', end: '20:00' },
    dailyCap: 3,
    source: 'Maryland Stop the Spam Calls Act of 2023 (calls or texts), in force 2024-01-01',
  },
  WA: { hours: { start: '08:00', end: '20:00' }, source: 'RCW 19.158.040' },
  CT: { hours: { start: '09:00', end: '20:00' }, source: 'Connecticut SB 1058 (2023)' },
  TX: {
    hours: { start: '09:00', end: '21:00' },
    sunday: { start: '12:00', end: '21:00' },
    source: 'Tex. Bus. & Com. Code ch. 301, texts included since SB 140 (2025-09-01)',
  },
  AL: {
    hours: { start: '08:00', end: '20:00' },
    sunday: null,
    holidays: true,
    source: 'Alabama (DNC tables)',
  },
  LA: {
    hours: { start: '08:00', end: '20:00' },
    sunday: null,
    holidays: true,
    source: 'Louisiana PSC rules',
  },
  MS: {
    hours: { start: '08:00', end: '20:00' },
    sunday: null,
    holidays: true,
    source: 'Mississippi (DNC tables)',
  },
  RI: {
    hours: { start: '09:00', end: '18:00' },
    saturday: { start: '10:00', end: '17:00' },
    sunday: null,
    holidays: true,
    source: 'Rhode Island (DNC tables)',
  },
  PA: { hours: { start: '08:00', end: '21:00' }, holidays: true, source: 'Pennsylvania (DNC holiday list)' },
  UT: { hours: { start: '08:00', end: '21:00' }, holidays: true, source: 'Utah (DNC holiday list)' },
};

/** Why a proactive message waits, and the rule's state when a state's law holds it. */
export const holdReasons = [
  'quiet_hours',
  'state_hours',
  'state_sunday',
  'state_holiday',
  'frequency_cap',
] as const;
export type HoldReason = (typeof holdReasons)[number];

const nthWeekday = (year: number, month: number, weekday: number, nth: number) => {
  const first = new Date(Date.UTC(year, month - 1, 1)).getUTCDay();
  return 1 + ((weekday - first + 7) % 7) + (nth - 1) * 7;
};
const lastWeekday = (year: number, month: number, weekday: number) => {
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const last = new Date(Date.UTC(year, month - 1, days)).getUTCDay();
  return days - ((last - weekday + 7) % 7);
};

/** `MM-DD` of a month and day. */
const monthDay = (month: number, date: number) =>
  `${String(month).padStart(2, '0')}-${String(date).padStart(2, '0')}`;

/**
 * The legal holidays every holiday state keeps, as `MM-DD` of `year`: New Year's Day, Memorial Day,
 * Independence Day, Labor Day, Thanksgiving, Christmas Day, on the day itself.
 */
export function restrictedHolidays(year: number): string[] {
  return [
    monthDay(1, 1),
    monthDay(5, lastWeekday(year, 5, 1)),
    monthDay(7, 4),
    monthDay(9, nthWeekday(year, 9, 1, 1)),
    monthDay(11, nthWeekday(year, 11, 4, 4)),
    monthDay(12, 25),
  ];
}

/** Easter Sunday of `year` (Gregorian; the anonymous algorithm), as month and day. */
function easter(year: number): { month: number; day: number } {
  const a = year % 19;
  const b = Math.floor(year / 100);
  const c = year % 100;
  const d = Math.floor(b / 4);
  const e = b % 4;
  const f = Math.floor((b + 8) / 25);
  const g = Math.floor((b - f + 1) / 3);
  const h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4);
  const k = c % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  return { month, day: ((h + l - 7 * m + 114) % 31) + 1 };
}

/** `MM-DD` of the day `offset` days from Easter Sunday (Mardi Gras -47, Good Friday -2). */
function fromEaster(year: number, offset: number) {
  const { month, day } = easter(year);
  const date = new Date(Date.UTC(year, month - 1, day + offset));
  return monthDay(date.getUTCMonth() + 1, date.getUTCDate());
}

/** Election Day: the Tuesday after the first Monday of November. */
const electionDay = (year: number) => monthDay(11, nthWeekday(year, 11, 1, 1) + 1);

/**
 * The state-only legal holidays of each holiday state, as `MM-DD` of `year`, beside
 * `restrictedHolidays`: the days its holiday statute names, on the day itself. Holidays of a county or
 * a parish only (Mardi Gras in Alabama's Mobile and Baldwin counties and in Louisiana's parishes) are
 * kept for the whole state: the area code cannot tell the county, and the stricter reading is kept.
 */
export const stateOnlyHolidays: Readonly<Record<string, (year: number) => string[]>> = {
  // Ala. Code § 1-3-8.
  AL: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Robert E. Lee / Martin Luther King Jr. birthday
    monthDay(2, nthWeekday(year, 2, 1, 3)), // George Washington / Thomas Jefferson birthday
    fromEaster(year, -47), // Mardi Gras (Mobile and Baldwin counties)
    monthDay(4, nthWeekday(year, 4, 1, 4)), // Confederate Memorial Day
    monthDay(6, nthWeekday(year, 6, 1, 1)), // Jefferson Davis's birthday
    monthDay(10, nthWeekday(year, 10, 1, 2)), // Columbus Day / American Indian Heritage Day
    monthDay(11, 11), // Veterans Day
  ],
  // La. R.S. 1:55.
  LA: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Martin Luther King Jr. Day
    fromEaster(year, -47), // Mardi Gras
    fromEaster(year, -2), // Good Friday
    monthDay(11, 11), // Veterans Day
  ],
  // Miss. Code § 3-3-7.
  MS: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Martin Luther King Jr. / Robert E. Lee birthday
    monthDay(2, nthWeekday(year, 2, 1, 3)), // Washington's birthday
    monthDay(4, lastWeekday(year, 4, 1)), // Confederate Memorial Day
    monthDay(11, 11), // Armistice (Veterans) Day
  ],
  // R.I. Gen. Laws § 25-1-1 (Election Day in the years of a general election).
  RI: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Martin Luther King Jr. Day
    monthDay(8, nthWeekday(year, 8, 1, 2)), // Victory Day
    monthDay(10, nthWeekday(year, 10, 1, 2)), // Columbus Day / Indigenous Peoples' Day
    ...(year % 2 === 0 ? [electionDay(year)] : []),
    monthDay(11, 11), // Veterans Day
  ],
  // 44 P.S. § 11 (Election Day: the general and municipal elections, every year).
  PA: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Martin Luther King Jr. Day
    monthDay(2, nthWeekday(year, 2, 1, 3)), // Presidents' Day
    fromEaster(year, -2), // Good Friday
    monthDay(6, 14), // Flag Day
    monthDay(10, nthWeekday(year, 10, 1, 2)), // Columbus Day
    electionDay(year),
    monthDay(11, 11), // Veterans Day
  ],
  // Utah Code § 63G-1-301.
  UT: (year) => [
    monthDay(1, nthWeekday(year, 1, 1, 3)), // Martin Luther King Jr. / Human Rights Day
    monthDay(2, nthWeekday(year, 2, 1, 3)), // Washington and Lincoln Day
    monthDay(6, 19), // Juneteenth National Freedom Day
    monthDay(7, 24), // Pioneer Day
    monthDay(10, nthWeekday(year, 10, 1, 2)), // Columbus Day
    monthDay(11, 11), // Veterans Day
  ],
};

/** Every legal holiday of `state` on which it forbids solicitations, as sorted `MM-DD` of `year`. */
export function stateHolidays(state: string, year: number): string[] {
  if (!stateRules[state]?.holidays) return [];
  const days = new Set([...restrictedHolidays(year), ...(stateOnlyHolidays[state]?.(year) ?? [])]);
  return [...days].sort();
}

const holidayCache = new Map<string, Set<string>>();
function isRestrictedHoliday(state: string, year: number, month: number, date: number) {
  const key = `${state}/${year}`;
  let days = holidayCache.get(key);
  if (!days) {
    days = new Set(stateHolidays(state, year));
    holidayCache.set(key, days);
  }
  return days.has(monthDay(month, date));
}

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

interface LocalDay {
  year: number;
  month: number;
  day: number;
}

/**
 * The minutes of a local day in which this lead may get a proactive message: the account's window,
 * narrowed by the lead's state's hours for that weekday; null on a day its state forbids (a Sunday, a
 * legal holiday) or when nothing of the account's window is left.
 */
export function allowedMinutes(
  window: SendingWindow,
  state: string | null,
  date: LocalDay,
): { start: number; end: number } | null {
  const rule = state ? stateRules[state] : undefined;
  let hours: Hours | null = rule?.hours ?? null;
  if (rule) {
    if (rule.holidays && isRestrictedHoliday(state!, date.year, date.month, date.day)) return null;
    const weekday = new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay();
    if (weekday === 0 && rule.sunday !== undefined) {
      if (rule.sunday === null) return null;
      hours = rule.sunday;
    }
    if (weekday === 6 && rule.saturday) hours = rule.saturday;
  }
  const start = Math.max(minutesOf(window.start), hours ? minutesOf(hours.start) : 0);
  const end = Math.min(minutesOf(window.end), hours ? minutesOf(hours.end) : 24 * 60);
  return start < end ? { start, end } : null;
}

const minuteOfDay = (parts: { hour: number; minute: number }) => parts.hour * 60 + parts.minute;

function inside(at: Date, zone: string, window: SendingWindow, state: string | null) {
  const p = wallClockAt(at, zone);
  const allowed = allowedMinutes(window, state, p);
  const minute = minuteOfDay(p);
  return allowed !== null && minute >= allowed.start && minute < allowed.end;
}

/** How far ahead an opening is looked for: past any run of closed days (a holiday weekend). */
const LOOKAHEAD_DAYS = 14;

/** The next time the window opens in a zone, for an instant outside it; null if none is near. */
function nextOpening(at: Date, zone: string, window: SendingWindow, state: string | null): Date | null {
  const p = wallClockAt(at, zone);
  for (let offset = 0; offset <= LOOKAHEAD_DAYS; offset++) {
    // Noon UTC of a later local day avoids DST edges when stepping days.
    const day =
      offset === 0 ? p : wallClockAt(new Date(Date.UTC(p.year, p.month - 1, p.day + offset, 12)), 'UTC');
    const allowed = allowedMinutes(window, state, day);
    if (!allowed) continue;
    const opens = zonedInstant(day.year, day.month, day.day, allowed.start, zone);
    if (opens.getTime() > at.getTime()) return opens;
  }
  return null;
}

/**
 * The earliest instant at or after `at` that is inside the sending window in every zone the lead may
 * be in (a number whose area code spans two zones gets the intersection), its state's hours, Sundays
 * and holidays included. With the window disabled, `at` itself. A window that does not open for this
 * lead within two weeks (its state's hours exclude all of the account's): null.
 */
export function nextSendTime(at: Date, window: SendingWindow, location: LeadLocation): Date | null {
  if (!window.enabled) return at;
  let candidate = at;
  // Each pass moves to a zone's next opening; zones a few hours apart agree within a few passes.
  for (let pass = 0; pass < 16; pass++) {
    const closed = location.zones.find((zone) => !inside(candidate, zone, window, location.state));
    if (!closed) return candidate;
    const opening = nextOpening(candidate, closed, window, location.state);
    if (!opening) return null;
    candidate = opening;
  }
  return null;
}

/**
 * When the lead's state's cap on proactive messages per 24 hours lets one more go out, given the ones
 * sent (`sent`, any order): `at` itself when under the cap.
 */
export function capLiftsAt(at: Date, sent: readonly Date[], cap: number): Date {
  const since = at.getTime() - DAY_MS;
  const recent = sent
    .map((time) => time.getTime())
    .filter((time) => time > since && time <= at.getTime())
    .sort((x, y) => x - y);
  if (recent.length < cap) return at;
  // The oldest messages must leave the 24 hours until fewer than `cap` are left in them.
  return new Date(recent[recent.length - cap]! + DAY_MS);
}

const DAY_MS = 86_400_000;

/** A proactive message that may not go out at the instant asked: why, and when it may. */
export interface Hold {
  reason: HoldReason;
  /** The state whose law holds it; null for the account's own window. */
  state: string | null;
  /** The lead's zone in which the window is closed (the first of its zones for the cap). */
  zone: string;
  next_allowed_at: Date;
}

/** Why the window is closed at `at` in `zone`, which it is. */
function closedReason(at: Date, zone: string, window: SendingWindow, state: string | null): HoldReason {
  const p = wallClockAt(at, zone);
  const minute = minuteOfDay(p);
  if (minute < minutesOf(window.start) || minute >= minutesOf(window.end)) return 'quiet_hours';
  const rule = state ? stateRules[state] : undefined;
  if (state && rule?.holidays && isRestrictedHoliday(state, p.year, p.month, p.day)) return 'state_holiday';
  const weekday = new Date(Date.UTC(p.year, p.month - 1, p.day)).getUTCDay();
  if (weekday === 0 && rule?.sunday !== undefined) return 'state_sunday';
  return 'state_hours';
}

/**
 * Whether a proactive message (a sequence step, fixed or AI-written) to this lead may go out at `at`,
 * given the proactive messages it got in the last 24 hours (`sent`): null when it may, else the hold,
 * whose `next_allowed_at` is the earliest instant every rule allows (the window open, its state's cap
 * not reached). A window that never opens for the lead is looked at again a day later, so a change of
 * the account's window takes effect. With the window disabled nothing is held.
 */
export function proactiveHold(
  at: Date,
  window: SendingWindow,
  location: LeadLocation,
  sent: readonly Date[] = [],
): Hold | null {
  if (!window.enabled) return null;
  const cap = location.state ? stateRules[location.state]?.dailyCap : undefined;
  let reason: Omit<Hold, 'next_allowed_at'> | null = null;
  let candidate = at;
  for (let pass = 0; pass < 8; pass++) {
    const open = nextSendTime(candidate, window, location);
    if (!open) {
      const zone = location.zones[0]!;
      return {
        ...(reason ?? {
          reason: closedReason(candidate, zone, window, location.state),
          state: location.state,
          zone,
        }),
        next_allowed_at: new Date(candidate.getTime() + DAY_MS),
      };
    }
    if (!reason && open.getTime() > at.getTime()) {
      const zone = location.zones.find((z) => !inside(at, z, window, location.state)) ?? location.zones[0]!;
      const why = closedReason(at, zone, window, location.state);
      reason = { reason: why, state: why === 'quiet_hours' ? null : location.state, zone };
    }
    const lifts = cap === undefined ? open : capLiftsAt(open, sent, cap);
    if (lifts.getTime() === open.getTime()) {
      return open.getTime() === at.getTime() ? null : { ...reason!, next_allowed_at: open };
    }
    reason ??= { reason: 'frequency_cap', state: location.state, zone: location.zones[0]! };
    candidate = lifts;
  }
  return { ...reason!, next_allowed_at: candidate };
}
