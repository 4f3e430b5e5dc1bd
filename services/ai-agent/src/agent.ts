import {
  aiPaused,
  composeSystemPrompt,
  DEFAULT_SENDING_WINDOW,
  keywordOf,
  optOutOf,
  stepHold,
  awaitsOptOutDecision,
  decideAiTurn,
  skipReason,
  stepHeldForConsent,
  type AiTurn,
  type AiTurnState,
} from '@leadline/domain';
import {
  consentStateOf,
  consentStatuses,
  conversationStates,
  loadPromptInput,
  proactiveSends,
} from '@leadline/decision-state';
import { ai, type DomainEvent, type EventCodec, type EventType, type TopicNames } from '@leadline/events';
import {
  advanceCheckpoint,
  createKeyedBatcher,
  freshRecords,
  startLogConsumer,
  timeStage,
  type Clock,
  type CommandBus,
  type Database,
  type DocumentStore,
  type EventToAppend,
  type NewId,
  type PositionedEvent,
  type ProjectionProgress,
  watchQueue,
} from '@leadline/runtime';
import type { Kafka } from 'kafkajs';
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { refreshContextUrls } from './context-refresh';
import { loadAttachments } from './media';
import type { Responder, TurnInput, TurnProposal } from './turn';

export interface AgentDeps {
  kafka: Kafka;
  /** The agent's own connections, for its queue (outside the commands' transactions). */
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  commands: CommandBus;
  /** The projector's progress, to wait for a burst to be in the read models before the pre-check. */
  progress: ProjectionProgress;
  clock: Clock;
  newId: NewId;
  groupId: string;
  responder: Responder;
  documents: DocumentStore;
  allowPrivateTargets: boolean;
  twilio?: { accountSid: string; authToken: string } | undefined;
  /** Quiet time after the last inbound message before a burst is answered. */
  replyDelayMs: number;
  maxMessagesPerLeadPerDay: number;
  /** Bound on one model turn (all its tool rounds). */
  modelTimeoutMs: number;
  /** After failing this long, a turn is handed off (`ai_unavailable`) instead of retried. */
  unavailableAfterMs: number;
  /** First retry delay; doubled per attempt, capped at a minute. */
  retryBaseMs?: number;
  pollIntervalMs?: number;
  concurrency?: number;
  /** Context pages are fetched again this long after their last attempt; off when undefined. */
  contextRefreshMs?: number;
  onError?: (error: unknown) => void;
}

export interface RunningAgent {
  /** Fetches the context pages due again now (tests call it rather than wait). */
  refreshContext(): Promise<number>;
  /** Handles the turns due now (tests and the bench call it rather than wait for the poll). */
  work(): Promise<number>;
  stop(): Promise<void>;
}

type TurnRow = Selectable<Database['ai_pending_turns']>;
type PendingMessage = Selectable<Database['ai_pending_messages']>;
/** A leased turn and the inbound messages it answers (none for a sequence step). */
interface ClaimedTurn {
  turn: TurnRow;
  messages: PendingMessage[];
}
type Trx = Transaction<Database>;

/** The most turns of one account recorded in one command. */
const RECORD_BATCH_MAX = 100;
/** Messages older than this when the agent first sees them (history before it ran) are not answered. */
const MAX_INTAKE_AGE_MS = 24 * 3600_000;
const LEASE_MS = 5 * 60_000;
const HISTORY_MESSAGES = 30;
const PROJECTED_WAIT_MS = 2_000;
/** How often a sequence step waiting for an answered STOP's decision looks again. */
const OPT_OUT_DECISION_POLL_MS = 1_000;

const inboundTurnId = (accountId: string, phone: string) => `inbound:${accountId}:${phone}`;

/**
 * The AI agent. Intake: a log consumer (checkpointed in Postgres, in the same transaction as what it
 * queues) turns `message.received` into a pending turn per conversation, due `replyDelayMs` after the
 * latest message of the burst, and `sequence.ai_step_requested` into a pending step. Work: due turns
 * are claimed with a lease; the model is called with a timeout outside any transaction or lock; the
 * outcome is decided under the account's lock against caught-up read models (a turn whose messages
 * were already handled writes nothing), and the answered messages leave the queue.
 */
export async function startAiAgent(deps: AgentDeps): Promise<RunningAgent> {
  const { db, clock } = deps;
  const onError = deps.onError ?? ((error) => console.error('ai-agent:', error));
  const retryBaseMs = deps.retryBaseMs ?? 2_000;
  let stopped = false;
  const sleepers = new Set<() => void>();
  const unwatchQueue = watchQueue('ai_turns', async () => {
    const { rows } = await sql<{ depth: string; lateness: number | null }>`
      select count(*)::text as depth,
             extract(epoch from ${clock.now()}::timestamptz - min(due_at) filter (where due_at <= ${clock.now()}))::float8 as lateness
      from ai_pending_turns`.execute(db);
    return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
  });
  const wake = () => {
    for (const sleeper of sleepers) sleeper();
  };
  /**
   * Counts what can make a turn due (the log bringing messages, a turn left with a newer burst, the
   * poll). A claim that finds fewer due turns than it asked for notes the count it started at: until it
   * moves, a free slot waits instead of asking the queue again for nothing.
   */
  let queueChanges = 0;
  let drainedAt = -1;
  const turnsQueued = () => {
    queueChanges++;
    wake();
  };

  /** What `intake` takes in; the consumer passes over batches holding none of these. */
  const intakeTypes: ReadonlySet<EventType> = new Set(['message.received', 'sequence.ai_step_requested']);

  async function intake(trx: Trx, partition: number, record: PositionedEvent & { event: DomainEvent }) {
    const { event } = record;
    if (event.type === 'message.received') {
      const { data } = event;
      // Keywords and revocations in words are the messaging decider's (it confirms an opt-out once).
      if (keywordOf(data.body) || optOutOf(data.body)) return;
      const at = new Date(event.occurred_at);
      if (clock.now().getTime() - at.getTime() > MAX_INTAKE_AGE_MS) return;
      const turnId = inboundTurnId(event.account_id, data.phone);
      await trx
        .insertInto('ai_pending_messages')
        .values({
          message_id: data.message_id,
          turn_id: turnId,
          account_id: event.account_id,
          phone: data.phone,
          body: data.body,
          media: JSON.stringify(data.media),
          received_at: event.occurred_at,
          log_partition: partition,
          log_next_offset: BigInt(record.offset) + 1n,
        })
        .onConflict((oc) => oc.doNothing())
        .execute();
      const due = new Date(at.getTime() + deps.replyDelayMs);
      await trx
        .insertInto('ai_pending_turns')
        .values({
          id: turnId,
          kind: 'inbound',
          account_id: event.account_id,
          partner_id: event.partner_id,
          phone: data.phone,
          due_at: due,
          lease_until: null,
          first_failure_at: null,
          step: null,
          causation_id: event.id,
          correlation_id: event.correlation_id,
        })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            // A later message of the burst pushes the answer back; an earlier redelivery does not.
            due_at: sql`greatest(ai_pending_turns.due_at, excluded.due_at)`,
            causation_id: sql`excluded.causation_id`,
            correlation_id: sql`excluded.correlation_id`,
          }),
        )
        .execute();
    } else if (event.type === 'sequence.ai_step_requested') {
      const { data } = event;
      await trx
        .insertInto('ai_pending_turns')
        .values({
          id: `step:${data.enrollment_id}:${data.step_order}`,
          kind: 'step',
          account_id: event.account_id,
          partner_id: event.partner_id,
          phone: data.phone,
          due_at: event.occurred_at,
          lease_until: null,
          first_failure_at: null,
          step: JSON.stringify(data),
          causation_id: event.id,
          correlation_id: event.correlation_id,
        })
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
  }

  async function handleBatch(topic: string, partition: number, records: PositionedEvent[]) {
    const last = records.at(-1);
    if (!last) return;
    await db.transaction().execute(async (trx) => {
      const fresh = await freshRecords(trx, 'ai_agent_checkpoints', topic, partition, records, clock.now());
      for (const record of fresh)
        if (record.event) await intake(trx, partition, { ...record, event: record.event });
      await advanceCheckpoint(trx, 'ai_agent_checkpoints', topic, partition, last.offset, clock.now());
    });
    turnsQueued();
  }

  /**
   * Leases up to `limit` due turns, each with the messages of its burst (read once for all of them; a
   * message queued after this read is the next burst, answered when this turn is finished).
   */
  async function claim(limit: number): Promise<ClaimedTurn[]> {
    const now = clock.now();
    const turns = await db
      .updateTable('ai_pending_turns')
      .set({ lease_until: new Date(now.getTime() + LEASE_MS) })
      .where(
        'id',
        'in',
        db
          .selectFrom('ai_pending_turns')
          .select('id')
          .where('due_at', '<=', now)
          .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
          .orderBy('due_at')
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute();
    const inbound = turns.filter((turn) => turn.kind === 'inbound').map((turn) => turn.id);
    const messages =
      inbound.length === 0
        ? []
        : await db
            .selectFrom('ai_pending_messages')
            .selectAll()
            .where('turn_id', 'in', inbound)
            .orderBy('received_at')
            .orderBy('message_id')
            .execute()
            .catch(async (error: unknown) => {
              // Not processed: the leases end soon, as a failed turn's do, rather than in LEASE_MS.
              await release(turns, error);
              return null;
            });
    if (messages === null) return [];
    return turns.map((turn) => ({
      turn,
      messages: messages.filter((message) => message.turn_id === turn.id),
    }));
  }

  /** What the decider reads, from the given connection (the command's transaction, or a plain read). */
  const loadAccount = (reader: Kysely<Database>, accountId: string) =>
    reader
      .selectFrom('accounts')
      .select(['id', 'status', 'company_name', 'ai_pause_minutes', 'sending_window', 'consent_required'])
      .where('id', '=', accountId)
      .executeTakeFirst();

  /** One turn to load the state of: its keys, and whether its decision needs the checklist. */
  interface StateRequest {
    turn: TurnRow;
    keys: string[];
    /** The checklist matters only to a proposal that collects something (not to skips and sends). */
    withChecklist: boolean;
  }

  /**
   * The state each turn of one account is decided against, in the order asked. Every query covers all
   * the turns' numbers at once (as the sequencer loads its steps), so a command recording many turns
   * reads about as much as one recording one.
   */
  async function loadStates(
    reader: Kysely<Database>,
    account: NonNullable<Awaited<ReturnType<typeof loadAccount>>>,
    requests: readonly StateRequest[],
  ): Promise<AiTurnState[]> {
    const now = clock.now();
    const window = account.sending_window ?? DEFAULT_SENDING_WINDOW;
    const phones = [...new Set(requests.map(({ turn }) => turn.phone))];
    const stepPhones = [...new Set(requests.flatMap(({ turn }) => (turn.step ? [turn.phone] : [])))];
    const enrollmentIds = requests.flatMap(({ turn }) => (turn.step ? [turn.step.enrollment_id] : []));
    const keys = requests.flatMap((request) => request.keys);
    const [conversations, handled, today, requirements, sent, enrollments, consents] = await Promise.all([
      // With the STOPs answered to Twilio whose decision is still queued: they silence the AI too.
      conversationStates(reader, account, phones),
      keys.length === 0
        ? Promise.resolve([])
        : reader
            .selectFrom('ai_handled_turns')
            .select('turn_key')
            .where('account_id', '=', account.id)
            .where('turn_key', 'in', keys)
            .execute(),
      reader
        .selectFrom('messages')
        .select((eb) => ['phone', eb.fn.countAll<string>().as('count')])
        .where('account_id', '=', account.id)
        .where('phone', 'in', phones)
        .where('direction', '=', 'outbound')
        .where('source', '=', 'ai')
        .where('sent_at', '>', new Date(now.getTime() - 24 * 3600_000))
        .groupBy('phone')
        .execute(),
      requests.some((request) => request.withChecklist)
        ? reader
            .selectFrom('requirements')
            .select(['id', 'name', 'type', 'required'])
            .where('account_id', '=', account.id)
            .orderBy('created_at')
            .orderBy('id')
            .execute()
        : Promise.resolve([]),
      stepPhones.length === 0
        ? Promise.resolve(new Map<string, Date[]>())
        : proactiveSends(reader, account.id, window, stepPhones, now),
      enrollmentIds.length === 0
        ? Promise.resolve([])
        : reader
            .selectFrom('sequence_enrollments')
            .select(['id', 'status', 'current_step'])
            .where('id', 'in', enrollmentIds)
            .where('account_id', '=', account.id)
            .execute(),
      // Only a sequence step's message may be held for consent.
      stepPhones.length === 0 ? Promise.resolve(new Map()) : consentStatuses(reader, account.id, stepPhones),
    ]);
    const checklistLeads = requests.flatMap(({ turn, withChecklist }) => {
      const lead = conversations.get(turn.phone)?.lead;
      return withChecklist && lead ? [lead.lead_id] : [];
    });
    const collected =
      checklistLeads.length === 0
        ? []
        : await reader
            .selectFrom('lead_checklist_items')
            .select(['lead_id', 'requirement_id'])
            .where('lead_id', 'in', checklistLeads)
            .execute();
    const handledKeys = new Set(handled.map((row) => row.turn_key));
    const todayOf = new Map(today.map((row) => [row.phone, Number(row.count)]));
    const enrollmentOf = new Map(enrollments.map((row) => [row.id, row]));
    return requests.map(({ turn, keys: turnKeys, withChecklist }) => {
      const conversation = conversations.get(turn.phone)!;
      const leadId = conversation.lead?.lead_id;
      const step = turn.step;
      const enrollment = step && enrollmentOf.get(step.enrollment_id);
      return {
        ...conversation,
        handled: turnKeys.some((key) => handledKeys.has(key)),
        aiPaused: aiPaused(conversation.conversation, now),
        aiMessagesToday: todayOf.get(turn.phone) ?? 0,
        requirements: withChecklist ? requirements : [],
        collected: new Set(
          collected.filter((row) => row.lead_id === leadId).map((row) => row.requirement_id),
        ),
        stepHold: step ? stepHold(now, turn.phone, window, sent.get(turn.phone)) : null,
        stepEnrollmentActive: step
          ? enrollment?.status === 'active' && enrollment.current_step === step.step_order
          : null,
        consent: consentStateOf(account, consents, turn.phone),
      };
    });
  }

  async function buildInput(
    turn: TurnRow,
    account: { id: string; company_name: string },
    messages: PendingMessage[],
  ): Promise<TurnInput> {
    const burstIds = messages.map((message) => message.message_id);
    // Three independent reads side by side: the lead and then its prompt input, the history, the media.
    const leadAndPrompt = db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', account.id)
      .where('phone', '=', turn.phone)
      .executeTakeFirst()
      .then(async (lead) => ({ leadRow: lead, promptInput: await loadPromptInput(db, account, lead) }));
    const [{ leadRow, promptInput }, history, attachments] = await Promise.all([
      leadAndPrompt,
      db
        .selectFrom('messages')
        .select(['id', 'direction', 'body'])
        .where('account_id', '=', account.id)
        .where('phone', '=', turn.phone)
        .$if(burstIds.length > 0, (query) => query.where('id', 'not in', burstIds))
        .orderBy('sent_at', 'desc')
        .orderBy('id', 'desc')
        .limit(HISTORY_MESSAGES)
        .execute(),
      loadAttachments(
        {
          db,
          documents: deps.documents,
          clock,
          newId: deps.newId,
          allowPrivateTargets: deps.allowPrivateTargets,
          twilio: deps.twilio,
        },
        account,
        messages,
        onError,
      ),
    ]);
    return {
      systemPrompt: composeSystemPrompt(promptInput),
      company: account.company_name,
      leadFirstName: leadRow?.first_name ?? leadRow?.name?.split(' ')[0] ?? null,
      history: history.reverse().map((message) => ({ direction: message.direction, body: message.body })),
      burst: messages.map((message) => ({ message_id: message.message_id, body: message.body })),
      attachments,
      checklist: promptInput.checklist,
      instructions: turn.step?.instructions ?? null,
    };
  }

  async function callResponder(input: TurnInput): Promise<TurnProposal> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error('The model took too long')),
      deps.modelTimeoutMs,
    );
    try {
      return await deps.responder.respond(input, controller.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  /** What recording one turn decides with; `record` settles it. */
  interface Recording {
    turn: TurnRow;
    messageIds: string[];
    keys: string[];
    proposal: TurnProposal | null;
    unavailable: boolean;
  }
  /**
   * `recorded` is false when there was nothing to decide yet: the pre-check read read models that had
   * not caught up, so the model was not asked when it should be. `heldUntil` is set when a sequence
   * step's message was held by the sending window.
   */
  type Recorded = { recorded: boolean; heldUntil: Date | null };

  /**
   * Records turns of one account in one command, under its lock: one wait for the read models, one
   * append. Each turn is decided on its own, against its own conversation's state (every event a turn
   * produces is about its own number), and its events keep its own correlation and causation ids, as
   * recorded alone; two turns of one number never share a command.
   */
  async function recordTogether(accountId: string, recordings: Recording[]): Promise<Recorded[]> {
    const first = recordings[0]!.turn;
    const { result } = await deps.commands.execute({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: first.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: first.correlation_id ?? first.id,
        causationId: first.causation_id,
      },
      lockKeys: [`account:${accountId}`],
      consistency: 'partition',
      // The next decision about this account waits for the projector under the lock anyway.
      readYourWrites: false,
      decide: async (trx) => {
        const account = await loadAccount(trx, accountId);
        // The account is gone: nothing to decide, nothing to retry.
        if (!account)
          return { events: [], result: recordings.map(() => ({ recorded: true, heldUntil: null })) };
        const states = await loadStates(
          trx,
          account,
          recordings.map(({ turn, keys, proposal }) => ({
            turn,
            keys,
            withChecklist: (proposal?.collected.length ?? 0) > 0,
          })),
        );
        const events: EventToAppend[] = [];
        const results: Recorded[] = [];
        for (const [index, { turn, messageIds, proposal, unavailable }] of recordings.entries()) {
          const state = states[index]!;
          const aiTurn: AiTurn = {
            phone: turn.phone,
            message_ids: messageIds,
            sequence_step: turn.step && { ...turn.step, phone: turn.phone },
            proposal,
            unavailable,
            reply_message_id: deps.newId(),
            responder: deps.responder.name,
            maxMessagesPerDay: deps.maxMessagesPerLeadPerDay,
          };
          const decided = decideAiTurn(aiTurn, state, clock.now());
          const held = decided.find((event) => event.type === 'sequence.step_held');
          const ids = { correlationId: turn.correlation_id ?? turn.id, causationId: turn.causation_id };
          events.push(...decided.map((event) => ({ ...event, ...ids })));
          results.push({
            recorded: decided.length > 0 || state.handled,
            heldUntil: held?.type === 'sequence.step_held' ? new Date(held.data.next_step_at) : null,
          });
        }
        return { events, result: results };
      },
    });
    return result;
  }

  /**
   * Records a turn: it joins the next command of its account, which starts as soon as the account's
   * current one ends (group commit, as the command bus does with appends). Two turns of one number (its
   * reply and a sequence step) are recorded one after the other.
   */
  const record = createKeyedBatcher<Recording, Recorded>({
    keyOf: (recording) => recording.turn.account_id,
    conflicts: (a, b) => a.turn.phone === b.turn.phone,
    maxBatch: RECORD_BATCH_MAX,
    run: recordTogether,
  });

  async function finish(turn: TurnRow, messageIds: string[]) {
    let nextBurstQueued = false;
    await db.transaction().execute(async (trx) => {
      // The turn's row first: a message queued meanwhile (its intake upserts this row) is then either
      // committed and seen below, or queued after this transaction, under a new row. Without the lock,
      // a turn deleted after the intake's upsert left that message with no turn to answer it.
      await trx.selectFrom('ai_pending_turns').select('id').where('id', '=', turn.id).forUpdate().execute();
      if (messageIds.length > 0)
        await trx.deleteFrom('ai_pending_messages').where('message_id', 'in', messageIds).execute();
      const remaining = await trx
        .selectFrom('ai_pending_messages')
        .select('message_id')
        .where('turn_id', '=', turn.id)
        .limit(1)
        .execute();
      if (turn.kind === 'step' || remaining.length === 0) {
        await trx.deleteFrom('ai_pending_turns').where('id', '=', turn.id).execute();
      } else {
        // Messages that arrived meanwhile are the next burst: due when their own delay ends.
        await trx
          .updateTable('ai_pending_turns')
          .set({ lease_until: null, attempts: 0, first_failure_at: null })
          .where('id', '=', turn.id)
          .execute();
        nextBurstQueued = true;
      }
    });
    if (nextBurstQueued) turnsQueued();
  }

  /**
   * The pre-check reads read models that may not have caught up with the burst yet: it would read "no
   * such lead" for a new number and the model would not be asked, costing the turn a command under the
   * account's lock only to find the read models behind, and then a second one. So it first waits until
   * the projector announces it has passed the burst's last message on the log (briefly, and bounded:
   * past the bound the command decides). Messages queued without their place on the log are not waited for.
   */
  async function burstProjected(messages: PendingMessage[]) {
    let partition: number | undefined;
    let nextOffset = 0n;
    for (const message of messages) {
      if (message.log_partition === null || message.log_next_offset === null) continue;
      partition = message.log_partition;
      const after = BigInt(message.log_next_offset);
      if (after > nextOffset) nextOffset = after;
    }
    if (partition === undefined) return;
    await deps.progress.waitFor(deps.topics.account, partition, nextOffset, PROJECTED_WAIT_MS);
  }

  async function process({ turn, messages }: ClaimedTurn) {
    const messageIds = messages.map((message) => message.message_id);
    const keys = ai.turnKeys({
      message_ids: messageIds,
      sequence_step: turn.step && {
        enrollment_id: turn.step.enrollment_id,
        step_order: turn.step.step_order,
      },
    });
    if (turn.kind === 'inbound' && messages.length === 0) return finish(turn, []);

    // The account's row (its status and settings) does not come from the burst: read while waiting.
    const [account] = await Promise.all([loadAccount(db, turn.account_id), burstProjected(messages)]);
    if (!account) return finish(turn, messageIds);
    // The model's input is read beside the pre-check (both only read), so a turn that goes ahead does not
    // wait for one and then the other. Not with media: downloading and storing them waits for the
    // pre-check to let the turn go ahead.
    const early = messages.every((message) => message.media.length === 0)
      ? timeStage('ai_build_input', () => buildInput(turn, account, messages))
      : undefined;
    // Settled here if the turn stops at the pre-check; awaited (and its error handled) below otherwise.
    early?.catch(() => undefined);
    const state = (
      await timeStage('ai_load_state', () => loadStates(db, account, [{ turn, keys, withChecklist: false }]))
    )[0]!;
    if (state.handled) return finish(turn, messageIds);
    const checked = {
      sequence_step: turn.step && { ...turn.step, phone: turn.phone },
      maxMessagesPerDay: deps.maxMessagesPerLeadPerDay,
    };
    if (awaitsOptOutDecision(checked, state)) {
      await db
        .updateTable('ai_pending_turns')
        .set({ due_at: new Date(clock.now().getTime() + OPT_OUT_DECISION_POLL_MS), lease_until: null })
        .where('id', '=', turn.id)
        .execute();
      return;
    }
    let proposal: TurnProposal | null = null;
    let unavailable = false;
    // A step held by the sending window is not written until it opens, nor one without consent.
    if (!skipReason(checked, state) && !state.stepHold && !stepHeldForConsent(checked, state)) {
      try {
        const input = await (early ?? timeStage('ai_build_input', () => buildInput(turn, account, messages)));
        proposal = await timeStage('ai_model', () => callResponder(input));
      } catch (error) {
        const now = clock.now();
        const firstFailure = turn.first_failure_at ?? now;
        if (now.getTime() - firstFailure.getTime() < deps.unavailableAfterMs) {
          const delay = Math.min(retryBaseMs * 2 ** turn.attempts, 60_000);
          await db
            .updateTable('ai_pending_turns')
            .set({
              attempts: turn.attempts + 1,
              first_failure_at: firstFailure,
              lease_until: null,
              due_at: new Date(now.getTime() + delay),
            })
            .where('id', '=', turn.id)
            .execute();
          onError(error);
          return;
        }
        unavailable = true;
      }
    }
    const recorded = await timeStage('ai_record', () =>
      record({ turn, messageIds, keys, proposal, unavailable }),
    );
    if (recorded.heldUntil) {
      // The step is written and sent when the window opens again (the hold is on the log).
      await db
        .updateTable('ai_pending_turns')
        .set({ due_at: recorded.heldUntil, lease_until: null, attempts: 0, first_failure_at: null })
        .where('id', '=', turn.id)
        .execute();
    } else if (recorded.recorded) await timeStage('ai_finish', () => finish(turn, messageIds));
    else {
      // Decided too early (the read models were behind): due again at once.
      await db.updateTable('ai_pending_turns').set({ lease_until: null }).where('id', '=', turn.id).execute();
      turnsQueued();
    }
  }

  /** Releases turns whose processing failed, for a later attempt (the decision is idempotent). */
  async function release(turns: readonly TurnRow[], error: unknown) {
    onError(error);
    await db
      .updateTable('ai_pending_turns')
      .set({ lease_until: new Date(clock.now().getTime() + retryBaseMs) })
      .where(
        'id',
        'in',
        turns.map((turn) => turn.id),
      )
      .execute()
      .catch(onError);
  }

  async function work(limit = deps.concurrency ?? 8): Promise<number> {
    const claimed = await claim(limit);
    await Promise.all(
      claimed.map((claimedTurn) =>
        process(claimedTurn).catch((error: unknown) => release([claimedTurn.turn], error)),
      ),
    );
    return claimed.length;
  }

  const consumer = await startLogConsumer({
    kafka: deps.kafka,
    db,
    codec: deps.codec,
    groupId: deps.groupId,
    topics: [deps.topics.account],
    checkpoints: 'ai_agent_checkpoints',
    handleBatch,
    actsOn: (event) => intakeTypes.has(event.type),
    onCrash: (error) => onError(error),
  });

  // One claimer keeps up to `concurrency` turns in flight, each processed on its own, so a slow turn (a
  // model call, a busy account's lock) never holds up the others; it claims again when a slot is free
  // and the queue may hold due turns (the last claim filled every slot, or something was queued since
  // the last one came back short), and otherwise polls. (One claim for all the free slots, rather than
  // a poll per idle worker: idle workers polling the queue were load on the database.)
  const concurrency = deps.concurrency ?? 8;
  let inFlight = 0;
  const loop = (async () => {
    while (!stopped) {
      let claimed = 0;
      if (inFlight < concurrency && drainedAt !== queueChanges) {
        try {
          const asOf = queueChanges;
          const wanted = concurrency - inFlight;
          const turns = await claim(wanted);
          claimed = turns.length;
          if (claimed < wanted) drainedAt = asOf;
          for (const claimedTurn of turns) {
            inFlight++;
            void process(claimedTurn)
              .catch((error: unknown) => release([claimedTurn.turn], error))
              .finally(() => {
                inFlight--;
                wake();
              });
          }
        } catch (error) {
          onError(error);
        }
      }
      // More may be due: claim again. Full, or nothing due: wait for a slot, the log, or the poll.
      if (claimed > 0 && inFlight < concurrency && drainedAt !== queueChanges) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          sleepers.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          // Time makes delayed turns due, and other agents' intake is seen only by polling.
          queueChanges++;
          done();
        }, deps.pollIntervalMs ?? 250);
        sleepers.add(done);
      });
    }
    // Stopping waits for the turns in flight.
    while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  })();

  const refreshContext = () =>
    refreshContextUrls({
      db,
      commands: deps.commands,
      clock,
      allowPrivateTargets: deps.allowPrivateTargets,
      refreshMs: deps.contextRefreshMs ?? 24 * 3600_000,
    });
  // Once a minute is plenty for a schedule counted in hours.
  const refresher =
    deps.contextRefreshMs === undefined
      ? undefined
      : setInterval(() => void refreshContext().catch(onError), 60_000);

  return {
    work,
    refreshContext,
    async stop() {
      stopped = true;
      unwatchQueue();
      if (refresher) clearInterval(refresher);
      wake();
      await loop;
      await consumer.stop();
    },
  };
}
