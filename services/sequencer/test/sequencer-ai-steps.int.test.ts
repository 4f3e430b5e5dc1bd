import { conversationState } from '@leadline/decision-state';
import { decideSendMessage } from '@leadline/domain';
import { listParked, newUuid, partitionForKey, skipParked } from '@leadline/runtime';
import { accountEvents, eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  clock,
  system,
  claimsDb,
  sequencer,
  useSequencerSystem,
  setUp,
  enrolledLead,
  bodiesOf,
  leadOf,
  settled,
} from './sequencer-system';

useSequencerSystem();

describe('AI steps', () => {
  it('asks the AI agent, waits, and moves on when the agent sends (or fails)', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'ai', instructions: 'Remind them.', delay_hours: 1 },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.message_sent).toBe(false);
    const requested = async () =>
      (await accountEvents(system.services)).filter(
        (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
      );
    expect(await requested()).toMatchObject([
      { data: { phone, step_order: 0, instructions: 'Ask for the pay stub.' } },
    ]);
    const request = (await requested())[0]!;
    if (request.type !== 'sequence.ai_step_requested') throw new Error('unreachable');

    // The agent writes and sends the message through the send decider.
    await system.services.commands.execute({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: request.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: request.id,
      },
      lockKeys: [`account:${accountId}`],
      consistency: 'partition',
      async decide(trx) {
        const account = await trx
          .selectFrom('accounts')
          .selectAll()
          .where('id', '=', accountId)
          .executeTakeFirstOrThrow();
        const state = await conversationState(trx, system.services.personalDataKeys, account, phone);
        const { enrollment_id, sequence_id, step_order } = request.data;
        const events = decideSendMessage(
          {
            type: 'SendMessage',
            message_id: newUuid(),
            phone,
            body: 'Could you send your latest pay stub?',
            source: 'sequence',
            sender_name: null,
            sequence_step: { enrollment_id, sequence_id, step_order },
          },
          state,
          clock.now(),
        );
        return { events, result: undefined };
      },
    });
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    await eventually(async () => ((await requested()).length === 2 ? true : undefined));
    const second = (await requested())[1]!;
    if (second.type !== 'sequence.ai_step_requested') throw new Error('unreachable');
    // The agent cannot write this one: the step is skipped.
    await system.services.commands.append({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: second.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: second.id,
      },
      events: [
        {
          type: 'sequence.ai_step_failed',
          data: {
            enrollment_id: second.data.enrollment_id,
            sequence_id: second.data.sequence_id,
            step_order: second.data.step_order,
            phone,
            reason: 'ai_unavailable',
          },
        },
      ],
    });
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 2 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Could you send your latest pay stub?', 'Bye']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
  });

  it("parks a record it cannot read and still decides the AI step's answer behind it on that partition", async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    const request = (await accountEvents(system.services)).find(
      (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
    );
    if (request?.type !== 'sequence.ai_step_requested') throw new Error('no AI step requested');

    // A record no codec can read, claiming to be an AI step's answer (a broken producer, a corrupted
    // copy), on the account's partition under another account's key.
    const topic = system.services.topics.account;
    const partitions = (await system.services.admin.fetchTopicOffsets(topic)).length;
    const partition = partitionForKey(topic, accountId, partitions);
    const producer = system.services.kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        {
          key: newUuid(),
          partition,
          value: Buffer.from('not an event'),
          headers: { 'event-type': 'sequence.ai_step_failed' },
        },
      ],
    });
    await producer.disconnect();
    // Then the agent's answer behind it: it could not write the step.
    await system.services.commands.append({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: request.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: request.id,
      },
      events: [
        {
          type: 'sequence.ai_step_failed',
          data: {
            enrollment_id: request.data.enrollment_id,
            sequence_id: request.data.sequence_id,
            step_order: request.data.step_order,
            phone,
            reason: 'ai_unavailable',
          },
        },
      ],
    });

    // The answer is decided: the step is skipped and the enrollment moves on to the next one,
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Bye']);
    // and the unreadable record waits for an operator, who lists and skips it as any consumer's.
    const parkedBySequencer = async () =>
      (await listParked(claimsDb)).filter((row) => row.consumer === 'sequencer');
    const [parked, ...others] = await eventually(async () => {
      const rows = await parkedBySequencer();
      return rows.length > 0 ? rows : undefined;
    });
    expect(others).toEqual([]);
    expect(parked).toMatchObject({ topic, partition, status: 'parked', event_type: null });
    expect(await skipParked(claimsDb, parked!, 'unreadable record', clock.now())).toBe(true);
    expect(await parkedBySequencer()).toEqual([]);
  });
});

describe('upgrading to checkpoints in Postgres', () => {
  it("continues where the consumer group's committed offsets left off, not from the log's start", async () => {
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    const request = (await accountEvents(system.services)).find(
      (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
    );
    if (request?.type !== 'sequence.ai_step_requested') throw new Error('no AI step requested');
    const failed = (reason: string) =>
      system.services.commands.append({
        stream: { topic: 'account', accountId },
        context: {
          partnerId: request.partner_id,
          actor: { kind: 'system', service: 'ai-agent' },
          correlationId: request.id,
        },
        events: [
          {
            type: 'sequence.ai_step_failed',
            data: {
              enrollment_id: request.data.enrollment_id,
              sequence_id: request.data.sequence_id,
              step_order: request.data.step_order,
              phone,
              reason,
            },
          },
        ],
      });
    const answerIds = async () =>
      (await accountEvents(system.services))
        .filter((event) => event.type === 'sequence.ai_step_failed' && event.account_id === accountId)
        .map((event) => event.id);

    // Given a sequencer of the previous version that had read the log up to here (its position in
    // its consumer group's committed offsets) and a table of checkpoints still empty,
    await failed('model_error');
    const topic = system.services.topics.account;
    const groupId = `${system.env.config.TOPIC_PREFIX}leadline.sequencer-upgraded`;
    await system.services.admin.setOffsets({
      groupId,
      topic,
      partitions: (await system.services.admin.fetchTopicOffsets(topic)).map(({ partition, high }) => ({
        partition,
        offset: high,
      })),
    });
    await claimsDb.deleteFrom('sequencer_checkpoints').execute();
    // when the new version starts and the agent answers again,
    await sequencer(system.services.commands, 60_000, groupId);
    await failed('ai_unavailable');
    // then the answer it decides is the one after that position: the one before it is not read again.
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    const [, after] = await answerIds();
    const skipped = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.step_skipped' && event.account_id === accountId,
    );
    expect(skipped).toMatchObject([{ causation_id: after, data: { step_order: 0, reason: 'ai_failed' } }]);
  });
});
