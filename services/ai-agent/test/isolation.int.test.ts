import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineTurn } from '../src/offline';
import type { Responder } from '../src/turn';
import { aiMessages, inbound, startAgentSystem, type AgentSystem } from './harness';

/**
 * One tenant's stuck turns (here a model that never answers its conversations; a pathological input
 * did the same before its text was bounded) must not hold every slot of the agent: the other tenants
 * are answered meanwhile.
 */
const STUCK = 'Stuck Lender';
let hanging = 0;
const responder: Responder = {
  name: 'model',
  async respond(input, signal) {
    if (input.company === STUCK) {
      hanging++;
      await new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
      );
    }
    return offlineTurn(input);
  },
};

let world: AgentSystem;
beforeAll(async () => {
  // Four slots, and a model bound longer than any test: only the fairness policy frees a slot here.
  world = await startAgentSystem({ responder, agent: { concurrency: 4, modelTimeoutMs: 600_000 } });
});
afterAll(() => world?.close());

async function account(name: string) {
  const { body } = await world.partner.post('/accounts', {
    name,
    company_name: name,
    consent_required: false,
  });
  return { id: body.id as string, number: body.phone_number as string };
}

describe("one tenant's stuck turns", () => {
  it("hold at most a quarter of the agent's slots: another account is answered meanwhile", async () => {
    const stuck = await account(STUCK);
    const quick = await account('Quick Lender');
    // Eight of the stuck tenant's leads text at once: eight turns due together.
    for (let lead = 0; lead < 8; lead++) {
      await inbound(world.system, stuck.number, `+1512555${String(7000 + lead)}`, 'Hi, any news?');
    }
    await eventually(async () => (hanging >= 1 ? true : undefined), { message: 'a stuck turn started' });

    await inbound(world.system, quick.number, '+15125557100', 'Hello?');
    const [reply] = await aiMessages(world.partner, quick.id, '+15125557100', 1);
    expect(reply!.body).toMatch(/Quick Lender/);
    // Answered while the stuck tenant still held its one slot (4 slots: a quarter is one), its other
    // turns waiting rather than taking the rest.
    expect(hanging).toBe(1);
  });
});
