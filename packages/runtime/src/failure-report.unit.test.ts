import { DomainError } from '@leadline/domain';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { exitWhenConsumerGivesUp, reportFailure } from './failure-report';

describe("a component's failure report", () => {
  afterEach(() => vi.restoreAllMocks());

  it('is one line, without a stack, for what the infrastructure does now and then', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const report = reportFailure('sequencer');
    report(
      new DomainError(
        503,
        'projection_lagging',
        'The read models are catching up with the event log; retry shortly.',
      ),
    );
    report(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    expect(error).not.toHaveBeenCalled();
    expect(warn.mock.calls).toEqual([
      [
        'sequencer: retried after a transient failure: DomainError projection_lagging: The read models are catching up with the event log; retry shortly.',
      ],
      [
        'sequencer: retried after a transient failure: Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5432',
      ],
    ]);
  });

  it('keeps the error itself, stack and all, for anything else', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const bug = new TypeError("Cannot read properties of undefined (reading 'steps')");
    reportFailure('sequencer')(bug);
    expect(warn).not.toHaveBeenCalled();
    expect(error).toHaveBeenCalledWith('sequencer:', bug);
  });
});

describe('a service whose log consumer crashed', () => {
  afterEach(() => vi.restoreAllMocks());

  it('keeps running and reports in one line when kafkajs restarts the consumer after a transient failure', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const exits: number[] = [];
    const onCrash = exitWhenConsumerGivesUp('projector', (code) => exits.push(code));
    onCrash(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), true);
    expect(exits).toEqual([]);
    expect(warn.mock.calls).toEqual([
      [
        'projector: the consumer crashed: retried after a transient failure: Error ECONNRESET: read ECONNRESET',
      ],
    ]);
  });

  it('exits with its error and stack when kafkajs gives up on the consumer', () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const exits: number[] = [];
    const onCrash = exitWhenConsumerGivesUp('projector', (code) => exits.push(code));
    const cause = new Error('the log has a gap');
    onCrash(cause, false);
    expect(exits).toEqual([1]);
    expect(error).toHaveBeenCalledWith('projector: the consumer crashed and will not restart', cause);
  });
});
