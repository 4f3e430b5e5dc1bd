import { isTransientFailure, parkingFailure } from './parking';

/**
 * How a long-running component reports a failure it recovers from by itself (a claim handed back, a
 * sweep tried again on the next poll). What the infrastructure does now and then (the read models
 * behind the log, the log cutting over, a connection reset: `isTransientFailure`) is one line, since
 * the work is retried by design and its stack says nothing; under load a sequencer would otherwise print
 * a stack for every account whose command met a lagging projector. Anything else keeps its stack: it
 * is a bug or a record to look at.
 */
export function reportFailure(component: string): (error: unknown) => void {
  return (error) => {
    if (isTransientFailure(error))
      console.warn(`${component}: retried after a transient failure: ${parkingFailure(error)}`);
    else console.error(`${component}:`, error);
  };
}
