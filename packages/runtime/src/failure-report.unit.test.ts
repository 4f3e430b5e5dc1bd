import { DomainError } from '@leadline/domain';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reportFailure } from './failure-report';

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
