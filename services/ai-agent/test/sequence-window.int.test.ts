import { accountEvents, eventually, fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineResponder } from '../src/offline';
import type { Responder } from '../src/turn';
import { aiMessages, messagesOf, newAccount, startAgentSystem, type AgentSystem } from './harness';

// Monday 2026-03-02, 20:59 in Austin (CST): two minutes before the lead's window closes.
const clock = fakeClock(new Date('2026-03-03T02:59:00Z'));
const MINUTE = 60_000;
/** Minutes the model "takes" to write its next answer, on the injected clock. */
let writingMinutes = 0;
const slowModel: Responder = {
  name: 'offline',
  async respond(input, signal) {
    clock.advance(writingMinutes * MINUTE);
    return offlineResponder.respond(input, signal);
  },
};

let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem({ clock, responder: slowModel });
});
afterAll(() => world?.close());

describe("an AI sequence step and the lead's sending window", () => {
  it('holds the message when the window closed while it was being written, and sends it when it opens', async () => {
    const { system, partner } = world;
    // Given an Austin lead enrolled at 20:59 in a sequence whose first step is AI-written,
    const account = await newAccount(partner, [{ name: 'Pay stub', type: 'document' }]);
    const phone = '+15125550401';
    await partner.post(`/accounts/${account.id}/leads`, { phone, first_name: 'Ana' });
    const sequence = await partner.post(`/accounts/${account.id}/sequences`, {
      name: 'Pay stub reminder',
      steps: [{ type: 'ai', instructions: 'Remind them about the pay stub' }],
    });
    writingMinutes = 3;
    await partner.post(`/accounts/${account.id}/sequences/${sequence.body.id}/enroll`, { phone });
    const enrolled = (await accountEvents(system.services)).find(
      (event) => event.type === 'sequence.enrolled' && event.account_id === account.id,
    );
    const step = {
      enrollment_id: enrolled?.type === 'sequence.enrolled' ? enrolled.data.enrollment_id : undefined,
      sequence_id: sequence.body.id,
      step_order: 0,
    };
    // when the model's message is ready at 21:02, after the window closed,
    const held = await eventually(async () => {
      const events = (await accountEvents(system.services)).filter(
        (event) => event.type === 'sequence.step_held' && event.account_id === account.id,
      );
      return events.length > 0 ? events : undefined;
    });
    // then it is not sent: the hold is on the log with the time the window opens (09:00 in Texas).
    expect(held.map((event) => event.data)).toEqual([
      {
        ...step,
        lead_id: expect.any(String),
        phone,
        stage: 'ai_send',
        reason: 'quiet_hours',
        state: null,
        zone: 'America/Chicago',
        next_step_at: '2026-03-03T15:00:00.000Z',
      },
    ]);
    expect(await messagesOf(partner, account.id, phone)).toEqual([]);

    // Before 09:00 nothing goes out; at 09:00 the step is written afresh and sent.
    writingMinutes = 0;
    clock.set(new Date('2026-03-03T14:59:00Z'));
    await world.agents[0]!.work();
    expect(await messagesOf(partner, account.id, phone)).toEqual([]);
    clock.set(new Date('2026-03-03T15:00:00Z'));
    const [message] = await aiMessages(partner, account.id, phone, 1, 'sequence');
    expect(message!.body).toContain('Ana');
    const requested = (await accountEvents(system.services)).filter(
      (event) => event.type === 'message.outbound_requested' && event.data.phone === phone,
    );
    expect(requested.map((event) => event.occurred_at)).toEqual(['2026-03-03T15:00:00.000Z']);
  });
});
