import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SENDING_WINDOW,
  leadLocation,
  nextSendTime,
  proactiveHold,
  restrictedHolidays,
  stateHolidays,
} from './sending-window';

const at = (iso: string) => new Date(iso);
const next = (phone: string, instant: string, window = DEFAULT_SENDING_WINDOW) =>
  nextSendTime(at(instant), window, leadLocation(phone, window.time_zone))?.toISOString();

const NEW_YORK = '+12125550100';
const LOS_ANGELES = '+12135550100';
const MIAMI = '+13055550100';
const OKLAHOMA_CITY = '+14055550100';
const BOISE = '+12085550100';
const NEW_ORLEANS = '+15045550100';
const SALT_LAKE_CITY = '+18015550100';

describe('leadLocation', () => {
  it('reads the zone and state from the area code, else falls back to the account zone', () => {
    expect(leadLocation(NEW_YORK, 'America/Chicago')).toEqual({ zones: ['America/New_York'], state: 'NY' });
    expect(leadLocation(MIAMI, 'UTC')).toEqual({ zones: ['America/New_York'], state: 'FL' });
    expect(leadLocation('+18005550100', 'America/Chicago')).toEqual({
      zones: ['America/Chicago'],
      state: null,
    });
    expect(leadLocation('+447700900123', 'Europe/London')).toEqual({ zones: ['Europe/London'], state: null });
  });
});

describe('nextSendTime', () => {
  it('sends at once inside the window', () => {
    expect(next(NEW_YORK, '2026-03-02T15:00:00Z')).toBe('2026-03-02T15:00:00.000Z');
  });

  it('holds New York and Los Angeles leads apart at the same instant', () => {
    // 07:00 in Los Angeles, 10:00 in New York.
    expect(next(NEW_YORK, '2026-03-02T15:00:00Z')).toBe('2026-03-02T15:00:00.000Z');
    expect(next(LOS_ANGELES, '2026-03-02T15:00:00Z')).toBe('2026-03-02T16:00:00.000Z');
    // 21:30 in New York: the next morning at 08:00 EST.
    expect(next(NEW_YORK, '2026-03-03T02:30:00Z')).toBe('2026-03-03T13:00:00.000Z');
  });

  it('ends the window at 21:00 exactly', () => {
    expect(next(NEW_YORK, '2026-03-03T01:59:00Z')).toBe('2026-03-03T01:59:00.000Z');
    expect(next(NEW_YORK, '2026-03-03T02:00:00Z')).toBe('2026-03-03T13:00:00.000Z');
  });

  it('follows the zone across the spring and autumn DST changes', () => {
    // Saturday 22:00 EST before the switch (2026-03-08): Sunday 08:00 is EDT, 12:00 UTC.
    expect(next(NEW_YORK, '2026-03-08T03:00:00Z')).toBe('2026-03-08T12:00:00.000Z');
    // Saturday 22:00 EDT before the end of DST (2026-11-01): Sunday 08:00 is EST, 13:00 UTC.
    expect(next(NEW_YORK, '2026-11-01T02:00:00Z')).toBe('2026-11-01T13:00:00.000Z');
    expect(next(LOS_ANGELES, '2026-11-01T05:00:00Z')).toBe('2026-11-01T16:00:00.000Z');
  });

  it('narrows the window for Florida and Oklahoma to 08:00-20:00', () => {
    // 20:30 local in Miami (EST): held until the next morning; New York is still open.
    expect(next(MIAMI, '2026-03-03T01:30:00Z')).toBe('2026-03-03T13:00:00.000Z');
    expect(next(NEW_YORK, '2026-03-03T01:30:00Z')).toBe('2026-03-03T01:30:00.000Z');
    // 20:30 CST in Oklahoma City.
    expect(next(OKLAHOMA_CITY, '2026-03-03T02:30:00Z')).toBe('2026-03-03T14:00:00.000Z');
  });

  it('keeps a window narrower than the law as given', () => {
    const narrow = { ...DEFAULT_SENDING_WINDOW, start: '10:00', end: '17:00' };
    expect(next(MIAMI, '2026-03-02T14:00:00Z', narrow)).toBe('2026-03-02T15:00:00.000Z');
  });

  it('uses the intersection of the zones of a multi-zone area code', () => {
    // 208 spans Mountain and Pacific: 08:00 Pacific (16:00 UTC in winter) opens it everywhere.
    expect(next(BOISE, '2026-01-15T15:00:00Z')).toBe('2026-01-15T16:00:00.000Z');
    // It closes at 21:00 Mountain (04:00 UTC).
    expect(next(BOISE, '2026-01-16T04:00:00Z')).toBe('2026-01-16T16:00:00.000Z');
  });

  it('sends at any hour when the account turned the window off', () => {
    expect(next(NEW_YORK, '2026-03-03T07:00:00Z', { ...DEFAULT_SENDING_WINDOW, enabled: false })).toBe(
      '2026-03-03T07:00:00.000Z',
    );
  });
});

const hold = (phone: string, instant: string, sent: string[] = [], window = DEFAULT_SENDING_WINDOW) => {
  const held = proactiveHold(at(instant), window, leadLocation(phone, window.time_zone), sent.map(at));
  return held && { ...held, next_allowed_at: held.next_allowed_at.toISOString() };
};

const MARYLAND = '+14105550100';
const AUSTIN = '+15125550100';
const BIRMINGHAM = '+12055550100';

describe('the 3-per-24-hours cap of Florida, Oklahoma and Maryland', () => {
  it('lets a third proactive message go and holds a fourth until the first is 24 hours old', () => {
    // Given a Miami lead who got two sequence messages this morning (09:00 and 10:00 EST),
    const sent = ['2026-03-02T14:00:00Z', '2026-03-02T15:00:00Z'];
    // when a third is due at 11:00 it goes out,
    expect(hold(MIAMI, '2026-03-02T16:00:00Z', sent)).toBeNull();
    // then a fourth at 12:00 waits until 09:00 tomorrow, when the first leaves the 24 hours.
    expect(hold(MIAMI, '2026-03-02T17:00:00Z', [...sent, '2026-03-02T16:00:00Z'])).toEqual({
      reason: 'frequency_cap',
      state: 'FL',
      zone: 'America/New_York',
      next_allowed_at: '2026-03-03T14:00:00.000Z',
    });
  });

  it('counts 24 real hours across the spring DST change', () => {
    // Given three messages on Saturday 2026-03-07 from 08:00 EST,
    const sent = ['2026-03-07T13:00:00Z', '2026-03-07T13:30:00Z', '2026-03-07T14:00:00Z'];
    // when a fourth is due at noon,
    const held = hold(MIAMI, '2026-03-07T17:00:00Z', sent);
    // then it waits 24 hours from the first: Sunday 09:00 EDT, no longer 08:00 on the wall clock.
    expect(held).toMatchObject({ reason: 'frequency_cap', next_allowed_at: '2026-03-08T13:00:00.000Z' });
  });

  it('moves a cap that lifts at night to the next window', () => {
    // Given three messages to an Oklahoma City lead from 19:00 CST,
    const sent = ['2026-03-03T01:00:00Z', '2026-03-03T01:20:00Z', '2026-03-03T01:40:00Z'];
    // when a fourth is due the next afternoon, the cap lifts at 19:00 and the window is open until 20:00;
    expect(hold(OKLAHOMA_CITY, '2026-03-03T20:00:00Z', sent)).toMatchObject({
      reason: 'frequency_cap',
      state: 'OK',
      next_allowed_at: '2026-03-04T01:00:00.000Z',
    });
    // then with the three sent from 19:40, it goes out at 19:40, the first's 24 hours later.
    const late = ['2026-03-03T01:40:00Z', '2026-03-03T01:50:00Z', '2026-03-03T01:59:00Z'];
    expect(hold(OKLAHOMA_CITY, '2026-03-03T20:00:00Z', late)?.next_allowed_at).toBe(
      '2026-03-04T01:40:00.000Z',
    );
  });

  it('applies in Maryland, not in New York, and not with the window turned off', () => {
    const sent = ['2026-03-02T14:00:00Z', '2026-03-02T14:10:00Z', '2026-03-02T14:20:00Z'];
    expect(hold(MARYLAND, '2026-03-02T15:00:00Z', sent)).toMatchObject({
      reason: 'frequency_cap',
      state: 'MD',
      next_allowed_at: '2026-03-03T14:00:00.000Z',
    });
    expect(hold(NEW_YORK, '2026-03-02T15:00:00Z', sent)).toBeNull();
    expect(
      hold(MARYLAND, '2026-03-02T15:00:00Z', sent, { ...DEFAULT_SENDING_WINDOW, enabled: false }),
    ).toBeNull();
  });
});

describe("Texas's Sunday hours", () => {
  it('holds a Sunday morning message until noon and a weekday one until 09:00', () => {
    // Given an Austin lead, when a step is due on Sunday 2026-03-01 at 10:00 CST,
    expect(hold(AUSTIN, '2026-03-01T16:00:00Z')).toEqual({
      reason: 'state_sunday',
      state: 'TX',
      zone: 'America/Chicago',
      // then it waits until 12:00 CST.
      next_allowed_at: '2026-03-01T18:00:00.000Z',
    });
    // On Monday at 08:30 it waits for 09:00 (the federal window alone would open at 08:00).
    expect(hold(AUSTIN, '2026-03-02T14:30:00Z')).toMatchObject({
      reason: 'state_hours',
      next_allowed_at: '2026-03-02T15:00:00.000Z',
    });
    expect(hold(AUSTIN, '2026-03-02T15:00:00Z')).toBeNull();
  });

  it('opens at noon CDT on the Sunday clocks go forward', () => {
    // Saturday 2026-03-07 21:30 CST: outside the window; Sunday opens at 12:00 CDT (17:00 UTC).
    expect(hold(AUSTIN, '2026-03-08T03:30:00Z')).toMatchObject({
      reason: 'quiet_hours',
      state: null,
      next_allowed_at: '2026-03-08T17:00:00.000Z',
    });
    // Sunday 2026-11-01, clocks went back: 11:00 CST is 17:00 UTC, noon is 18:00 UTC.
    expect(hold(AUSTIN, '2026-11-01T17:00:00Z')?.next_allowed_at).toBe('2026-11-01T18:00:00.000Z');
  });
});

describe('state holidays', () => {
  it('lists the six legal holidays every holiday state keeps, for the year', () => {
    expect(restrictedHolidays(2026)).toEqual(['01-01', '05-25', '07-04', '09-07', '11-26', '12-25']);
    expect(restrictedHolidays(2027)).toEqual(['01-01', '05-31', '07-04', '09-06', '11-25', '12-25']);
  });

  it('holds an Alabama lead on Christmas Day until the next morning', () => {
    // Given Christmas 2026, a Friday, when a step is due at 09:00 CST in Birmingham,
    expect(hold(BIRMINGHAM, '2026-12-25T15:00:00Z')).toEqual({
      reason: 'state_holiday',
      state: 'AL',
      zone: 'America/Chicago',
      // then it goes out on Saturday at 08:00.
      next_allowed_at: '2026-12-26T14:00:00.000Z',
    });
    // A New York lead is not held on Christmas.
    expect(hold(NEW_YORK, '2026-12-25T15:00:00Z')).toBeNull();
  });

  it('skips a holiday Saturday and the Sunday after it in Alabama', () => {
    // Independence Day 2026 is a Saturday; Alabama forbids Sundays too: Monday 08:00 CDT.
    expect(hold(BIRMINGHAM, '2026-07-04T15:00:00Z')).toMatchObject({
      reason: 'state_holiday',
      next_allowed_at: '2026-07-06T13:00:00.000Z',
    });
    expect(hold(BIRMINGHAM, '2026-07-05T15:00:00Z')).toMatchObject({
      reason: 'state_sunday',
      next_allowed_at: '2026-07-06T13:00:00.000Z',
    });
  });

  it("lists each holiday state's own legal holidays beside the common ones", () => {
    // Easter 2026 is April 5: Mardi Gras February 17, Good Friday April 3.
    expect(stateHolidays('LA', 2026)).toEqual([
      '01-01',
      '01-19',
      '02-17',
      '04-03',
      '05-25',
      '07-04',
      '09-07',
      '11-11',
      '11-26',
      '12-25',
    ]);
    expect(stateHolidays('AL', 2026)).toEqual(
      expect.arrayContaining(['01-19', '02-16', '02-17', '04-27', '06-01', '10-12', '11-11']),
    );
    expect(stateHolidays('MS', 2026)).toEqual(expect.arrayContaining(['01-19', '02-16', '04-27', '11-11']));
    // Rhode Island keeps Victory Day, and Election Day in the years of a general election.
    expect(stateHolidays('RI', 2026)).toEqual(expect.arrayContaining(['08-10', '10-12', '11-03', '11-11']));
    expect(stateHolidays('RI', 2027)).not.toContain('11-02');
    expect(stateHolidays('PA', 2027)).toEqual(
      expect.arrayContaining(['01-18', '02-15', '03-26', '06-14', '10-11', '11-02', '11-11']),
    );
    expect(stateHolidays('UT', 2026)).toEqual(expect.arrayContaining(['06-19', '07-24']));
    // States without a holiday rule keep none.
    expect(stateHolidays('FL', 2026)).toEqual([]);
    expect(stateHolidays('NY', 2026)).toEqual([]);
  });

  it('holds a Louisiana lead on Mardi Gras, and a Utah lead on Pioneer Day, but not a New York lead', () => {
    // Mardi Gras 2026, Tuesday February 17, 10:00 CST in New Orleans: Wednesday 08:00 CST.
    expect(hold(NEW_ORLEANS, '2026-02-17T16:00:00Z')).toEqual({
      reason: 'state_holiday',
      state: 'LA',
      zone: 'America/Chicago',
      next_allowed_at: '2026-02-18T14:00:00.000Z',
    });
    // Pioneer Day 2026 is a Friday: 10:00 MDT in Salt Lake City waits for Saturday 08:00 MDT.
    expect(hold(SALT_LAKE_CITY, '2026-07-24T16:00:00Z')).toMatchObject({
      reason: 'state_holiday',
      state: 'UT',
      next_allowed_at: '2026-07-25T14:00:00.000Z',
    });
    expect(hold(NEW_YORK, '2026-02-17T16:00:00Z')).toBeNull();
    expect(hold(NEW_YORK, '2026-07-24T16:00:00Z')).toBeNull();
  });

  it('finds the opening across the autumn DST change after a holiday weekend', () => {
    // Sunday 2026-11-01 (clocks back) in Alabama: Monday 08:00 CST is 14:00 UTC.
    expect(hold(BIRMINGHAM, '2026-11-01T15:00:00Z')?.next_allowed_at).toBe('2026-11-02T14:00:00.000Z');
  });
});
