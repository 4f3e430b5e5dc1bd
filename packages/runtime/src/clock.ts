import { v7 as uuidv7 } from 'uuid';

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

/** Time-ordered ids (UUID v7): they index well and sort by creation. */
export const newUuid: NewId = () => uuidv7();
