import { describe, expect, it } from 'vitest';
import { DEFAULT_SENDING_WINDOW, leadLocation, nextSendTime } from './sending-window';

const at = (iso: string) => new Date(iso);
const next = (phone: string, instant: string, window = DEFAULT_SENDING_WINDOW) =>
  nextSendTime(at(instant), window, leadLocation(phone, window.time_zone))?.toISOString();

const NEW_YORK = '+12125550100';
const LOS_ANGELES = '+12135550100';
const MIAMI = '+13055550100';
const OKLAHOMA_CITY = '+14055550100';
const BOISE = '+12085550100';

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
