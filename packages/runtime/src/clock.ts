import { v7 as uuidv7 } from 'uuid';
import { randomBytesDrawn } from './random-bytes';

/** Time and ids are inputs of the domain, so tests can fix them. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Timers are an input too: a worker's time budgets and idle waits run on them, so a test moves them by
 * hand with its clock instead of sleeping.
 */
export interface Timers {
  /** Calls `fire` once, `ms` from now; returns the way to cancel it. */
  after(ms: number, fire: () => void): () => void;
}

export const systemTimers: Timers = {
  after(ms, fire) {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
};

export type NewId = () => string;

/**
 * The uuid package's own order for ids made in one process: the time in milliseconds, and within one
 * millisecond a counter that starts at random and counts up (RFC 9562, method 1). Kept here because
 * the package keeps it only for the ids it draws its random bytes for itself.
 */
const v7Order = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

/**
 * Time-ordered ids (UUID v7): they index well and sort by creation. The random bytes are cut from a
 * block drawn at once (an id was about 5 µs of a sequence step's CPU when each drew its own).
 */
export const newUuid: NewId = () => {
  const random = randomBytesDrawn(16);
  const now = Date.now();
  if (now > v7Order.msecs) {
    v7Order.msecs = now;
    // The package's starting counter: 31 bits of the random bytes.
    v7Order.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    v7Order.seq = (v7Order.seq + 1) | 0;
    if (v7Order.seq === 0) v7Order.msecs++;
  }
  return uuidv7({ msecs: v7Order.msecs, seq: v7Order.seq, random });
};
