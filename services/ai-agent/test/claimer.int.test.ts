import type { CommandBus } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { sql, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineResponder } from '../src/offline';
import type { Responder } from '../src/turn';
import {
  aiMessages,
  handled,
  inbound,
  newAccount,
  pendingMessageCount,
  startAgentSystem,
  type AgentSystem,
} from './harness';

/**
 * The claimer asks the queue for work only when something can have made a turn due. These tests run
 * the agent with a poll interval far beyond their timeouts, so every answer below depends on a wake
 * (the log bringing a message, a turn left with a newer burst), never on the poll.
 */
const NEVER_POLLS_MS = 600_000;

/** A gate per message body: the model's answer to a burst starting with it waits until it opens. */
function gate() {
  let open: () => void = () => undefined;
  let reached: () => void = () => undefined;
  return {
    calls: 0,
    opened: new Promise<void>((resolve) => (open = resolve)),
    reached: new Promise<void>((resolve) => (reached = resolve)),
    open: () => open(),
    reach: () => reached(),
  };
}
const gates = new Map<string, ReturnType<typeof gate>>();
const holdingResponder: Responder = {
  name: offlineResponder.name,
  async respond(input, signal) {
    const held = gates.get(input.burst[0]?.body ?? '');
    if (held) {
      held.calls++;
      held.reach();
      await held.opened;
    }
    return offlineResponder.respond(input, signal);
  },
};

/** The accounts of the agent's commands, in the order it ran them; a hook runs as each one starts. */
const commandsRun: string[] = [];
const onCommand = new Map<string, () => void>();
/** The system's command bus, seen by the agent through a wrapper that notes each command it runs. */
const notingCommands: CommandBus = {
  execute(command) {
    const accountId = command.stream.topic === 'account' ? command.stream.accountId : '';
    commandsRun.push(accountId);
    onCommand.get(accountId)?.();
    return world.system.services.commands.execute(command);
  },
  append: (facts) => world.system.services.commands.append(facts),
  close: () => Promise.resolve(),
};

let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem({
    responder: holdingResponder,
    agent: { pollIntervalMs: NEVER_POLLS_MS, replyDelayMs: 0, commands: notingCommands },
  });
});
afterAll(() => world?.close());

const pendingCount = (phone: string) => pendingMessageCount(world.system, phone);

describe('claiming turns', () => {
  it('answers a message as soon as the log brings it, without waiting for the poll', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550401';
    await inbound(system, account.number, phone, 'Hello');
    const [reply] = await aiMessages(partner, account.id, phone, 1);
    expect(reply!.body).toBe('Could you send me your Email?');
    await inbound(system, account.number, phone, 'my email is lee@example.com');
    const replies = await aiMessages(partner, account.id, phone, 2);
    expect(replies[1]!.body).toBe('Thank you! We have everything we need. Sunrise will be in touch soon.');
  });

  it('answers a message that arrived while the previous one was being answered, as the next burst', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550402';
    const first = gate();
    gates.set('first', first);
    await inbound(system, account.number, phone, 'first');
    await first.reached;
    // The turn is claimed and its model call under way: the new message joins the queue behind it.
    await inbound(system, account.number, phone, 'my email is sam@example.com');
    await eventually(async () => ((await pendingCount(phone)) === 2 ? true : undefined));
    first.open();

    const replies = await aiMessages(partner, account.id, phone, 2);
    expect(first.calls).toBe(1);
    expect(replies.map((reply) => reply.body)).toEqual([
      'Could you send me your Email?',
      'Thank you! We have everything we need. Sunrise will be in touch soon.',
    ]);
  });

  it('keeps a message queued while the previous answer is being finished, and answers it', async () => {
    const { system, partner } = world;
    const { db } = system.services;
    const account = await newAccount(partner);
    const phone = '+15125550403';
    const turnId = `inbound:${account.id}:${phone}`;
    const answered = gate();
    gates.set('answered first', answered);
    await inbound(system, account.number, phone, 'answered first');
    await answered.reached;

    // The intake of a message that arrives just as the first answer is recorded: its message row and
    // its upsert of the conversation's turn, held open until the agent is finishing the first turn.
    const queuedId = 'queued-while-finishing';
    let commitIntake: () => void = () => undefined;
    const intakeHeld = new Promise<void>((resolve) => (commitIntake = resolve));
    const intake = db.transaction().execute(async (trx) => {
      await trx
        .insertInto('ai_pending_messages')
        .values({
          message_id: queuedId,
          turn_id: turnId,
          account_id: account.id,
          phone,
          body: 'one more thing',
          media: JSON.stringify([]),
          received_at: new Date(),
          log_partition: null,
          log_next_offset: null,
        })
        .execute();
      await trx
        .updateTable('ai_pending_turns')
        .set({ due_at: new Date() })
        .where('id', '=', turnId)
        .execute();
      await intakeHeld;
    });
    answered.open();
    // The agent's finishing transaction waits for the intake's lock on the turn.
    await eventually(async () => {
      const { rows } = await sql<{ waiting: number }>`
        select count(*)::int as waiting from pg_stat_activity
        where wait_event_type = 'Lock' and query ilike '%finish_ai_turn%'
          and pid <> pg_backend_pid()`.execute(db);
      return rows[0]!.waiting > 0 ? true : undefined;
    });
    commitIntake();
    await intake;

    // The queued message is answered as a burst of its own: it was neither lost with the first turn
    // nor left without a turn.
    await handled(system, account.id, [queuedId]);
    expect(await pendingCount(phone)).toBe(0);
    expect(await db.selectFrom('ai_pending_turns').select('id').where('id', '=', turnId).execute()).toEqual(
      [],
    );
  });

  it('answers a message whose pre-check read the read models before they had it', async () => {
    const { system, partner } = world;
    const { db } = system.services;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550404';

    // The projector is held back on this conversation from before the message arrives until the agent's
    // first command for it has started: a transaction inserts the conversation's row and stays open, so
    // the projector's insert of it waits. The pre-check, past its bounded wait for the projector, reads no
    // conversation for this new number and does not ask the model; the command, once the transaction
    // rolls back and the projector catches up, finds the conversation and has no answer to record.
    const holding = await db.startTransaction().execute();
    await holding
      .insertInto('conversations')
      .values({
        account_id: account.id,
        phone,
        started_at: null,
        preview: null,
        last_message_at: null,
        ai_paused_until: null,
        opted_out_at: null,
        summary: null,
      })
      .execute();
    const firstCommand = new Promise<void>((resolve) => onCommand.set(account.id, resolve));
    // Posted now, settled later: the test system answers an inbound SMS once it is decided and projected.
    const posted = inbound(system, account.number, phone, 'Hello');
    await firstCommand;
    await holding.rollback().execute();
    await posted;

    // The turn is due again at once and the claimer is woken for it: with no poll, nothing else would.
    const [reply] = await aiMessages(partner, account.id, phone, 1);
    expect(reply!.body).toBe('Could you send me your Email?');
    expect(commandsRun.filter((accountId) => accountId === account.id)).toHaveLength(2);
  });
});

/** Makes the next read of queued inbound messages fail, as a dropped connection would. */
let burstReadsToFail = 0;
const failingBurstReads: KyselyPlugin = {
  transformQuery({ node }) {
    const table = node.kind === 'SelectQueryNode' ? JSON.stringify(node.from) : '';
    if (burstReadsToFail > 0 && table.includes('"ai_pending_messages"')) {
      burstReadsToFail--;
      throw new Error('Connection terminated unexpectedly');
    }
    return node;
  },
  transformResult: ({ result }) => Promise.resolve(result),
};

// Last in this file: it replaces the agent that never polls with one that does, and whose database
// reads can fail.
describe('a claim that cannot read its messages', () => {
  it('gives its turns back at once, and they are answered at the next claim', async () => {
    const { system, partner } = world;
    const polling = await world.startAgent({
      db: system.services.db.withPlugin(failingBurstReads),
      pollIntervalMs: 50,
    });
    await world.agents[0]!.stop();
    world.agents.shift();
    expect(world.agents).toEqual([polling]);
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550405';

    burstReadsToFail = 1;
    await inbound(system, account.number, phone, 'Hello');
    // Its lease would otherwise last minutes: the answer comes only if the failed claim gave it back.
    const [reply] = await aiMessages(partner, account.id, phone, 1);
    expect(burstReadsToFail).toBe(0);
    expect(reply!.body).toBe('Could you send me your Email?');
  });
});
