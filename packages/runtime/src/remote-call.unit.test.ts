import { describe, expect, it } from 'vitest';
import { RemoteCallTimeout, runRemoteCall, withTimeout } from './remote-call';

describe('a remote call', () => {
  it('records its result after claiming, and calls nothing when the claim finds nothing', async () => {
    const steps: string[] = [];
    const outcome = await runRemoteCall('peer', 1000, {
      claim: async () => (steps.push('claim'), 'work'),
      call: async (claim) => (steps.push(`call ${claim}`), 42),
      record: async (claim, result) => void steps.push(`record ${claim} ${JSON.stringify(result)}`),
    });
    expect(outcome).toEqual({ ok: true, value: 42 });
    expect(steps).toEqual(['claim', 'call work', 'record work {"ok":true,"value":42}']);

    const nothing = await runRemoteCall('peer', 1000, {
      claim: async () => undefined,
      call: async () => steps.push('called anyway'),
      record: async () => void steps.push('recorded anyway'),
    });
    expect(nothing).toBeUndefined();
    expect(steps).toHaveLength(3);
  });

  it("records a peer's error and a silent peer's timeout as outcomes, and aborts the silent call", async () => {
    const failed = await runRemoteCall('peer', 1000, {
      claim: async () => 'work',
      call: async () => {
        throw new Error('refused');
      },
      record: async () => undefined,
    });
    expect(failed).toMatchObject({ ok: false, error: new Error('refused') });

    let aborted: unknown;
    const silent = withTimeout('silent peer', 5, (signal) => {
      signal.addEventListener('abort', () => (aborted = signal.reason));
      return new Promise<never>(() => undefined);
    });
    await expect(silent).rejects.toBeInstanceOf(RemoteCallTimeout);
    expect(aborted).toBeInstanceOf(RemoteCallTimeout);
  });
});
