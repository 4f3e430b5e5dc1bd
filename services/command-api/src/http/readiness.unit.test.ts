import { describe, expect, it } from 'vitest';
import { withinReadinessBound } from './readiness';

describe('readiness checks', () => {
  it('answer what the checks give when they finish within the bound', async () => {
    await expect(withinReadinessBound(async () => 'ready', 1_000)).resolves.toBe('ready');
  });

  it('fail once the bound has passed, even when a check never finishes', async () => {
    await expect(withinReadinessBound(() => new Promise<never>(() => {}), 20)).rejects.toThrow(
      /readiness checks took over 20 ms/,
    );
  });

  it('fail with the first failing check', async () => {
    await expect(
      withinReadinessBound(async () => Promise.reject(new Error('broker down')), 1_000),
    ).rejects.toThrow('broker down');
  });
});
