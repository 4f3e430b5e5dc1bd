import { v7 as uuidv7 } from 'uuid';

/** Time and ids are inputs of the domain, so tests can fix them. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export type NewId = () => string;

/** Time-ordered ids (UUID v7): they index well and sort by creation. */
export const newUuid: NewId = () => uuidv7();
