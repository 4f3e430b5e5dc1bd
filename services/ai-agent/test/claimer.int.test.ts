import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineResponder } from '../src/offline';
import type { Responder } from '../src/turn';
import { aiMessages, inbound, newAccount, startAgentSystem, type AgentSystem } from './harness';

/**
 * The claimer asks the queue for work only when something can have made a turn due. These tests run
 * the agent with a poll interval far beyond their timeouts, so every answer below depends on a wake
 * (the log bringing a message, a turn left with a newer burst), never on the poll.
 */
const NEVER_POLLS_MS = 600_000;

// The first answer to the held number waits until the test lets it go, so a second message can arrive
// while the first one is being answered.
const HELD_PHONE = '+15125550402';
let releaseHeld: () => void = () => undefined;
const heldReleased = new Promise<void>((resolve) => (releaseHeld = resolve));
let heldCalls = 0;
let heldStarted: () => void = () => undefined;
const heldInFlight = new Promise<void>((resolve) => (heldStarted = resolve));
const holdingResponder: Responder = {
  name: offlineResponder.name,
  async respond(input, signal) {
    if (input.history.every((message) => message.body !== 'first') && input.burst[0]?.body === 'first') {
      heldCalls++;
      heldStarted();
      await heldReleased;
    }
    return offlineResponder.respond(input, signal);
  },
};

let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem({
    responder: holdingResponder,
    agent: { pollIntervalMs: NEVER_POLLS_MS, replyDelayMs: 0 },
  });
});
afterAll(() => world?.close());

const pendingCount = (phone: string) =>
  world.system.services.db
    .selectFrom('ai_pending_messages')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow()
    .then((row) => Number(row.count));

describe('claiming turns', () => {
  it('answers a message as soon as the log brings it, without waiting for the poll', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550401';
    await inbound(system, account.number, phone, 'Hello');
    const [reply] = await aiMessages(partner, account.id, phone, 1);
    expect(reply!.body).toContain('Email');
    await inbound(system, account.number, phone, 'my email is lee@example.com');
    const replies = await aiMessages(partner, account.id, phone, 2);
    expect(replies[1]!.body).toBe('Thank you! We have everything we need. Sunrise will be in touch soon.');
  });

  it('answers a message that arrived while the previous one was being answered, as the next burst', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    await inbound(system, account.number, HELD_PHONE, 'first');
    await heldInFlight;
    // The turn is claimed and its model call under way: the new message joins the queue behind it.
    await inbound(system, account.number, HELD_PHONE, 'my email is sam@example.com');
    await eventually(async () => ((await pendingCount(HELD_PHONE)) === 2 ? true : undefined));
    releaseHeld();

    const replies = await aiMessages(partner, account.id, HELD_PHONE, 2);
    expect(heldCalls).toBe(1);
    expect(replies.map((reply) => reply.body)).toEqual([
      'Could you send me your Email?',
      'Thank you! We have everything we need. Sunrise will be in touch soon.',
    ]);
  });
});
