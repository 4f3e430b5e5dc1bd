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

/**
 * A service's answer to its log consumer crashing. A crash kafkajs restarts the consumer after is
 * reported as `reportFailure` reports one (a line for a transient failure). One it gives up after
 * (its restarts spent, or a gap found in the log) ends the process: every service is
 * supervised the same way (`npm start`, the container runtime), and one running without its consumer
 * would look alive while doing nothing.
 */
export function exitWhenConsumerGivesUp(
  component: string,
  exit: (code: number) => void = (code) => process.exit(code),
): (error: Error, willRestart: boolean) => void {
  const report = reportFailure(`${component}: the consumer crashed`);
  return (error, willRestart) => {
    if (willRestart) return report(error);
    console.error(`${component}: the consumer crashed and will not restart`, error);
    exit(1);
  };
}
