import { createModelResponder, startAiAgent } from '@leadline/ai-agent';
import {
  commandStageSeconds,
  createDb,
  createPostgresDocumentStore,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import { startFakeOpenAi } from '@leadline/test-kit';
import OpenAI from 'openai';
import { comparisonTable, measure, measureAtRate, percentile, throughput, type Measurement } from './stats';
import { cpuWindow } from './cpu';
import { profileWindowIfAsked } from './cpu-profile';
import { countStatements, statementsPer, statementTotal } from './statements';
import { expectStatus, startBenchSystem, type BenchSystem } from './system';

const ACCOUNTS = 5;
const CONVERSATIONS = 50;
const ROUNDS = 4;
/** Messages sent at a steady rate in the open-loop run. */
const STEADY_MESSAGES = 200;

/** Each stage's total seconds and calls so far (the command's stages, and the agent's own steps). */
async function stageTotals(): Promise<Map<string, { seconds: number; calls: number }>> {
  const totals = new Map<string, { seconds: number; calls: number }>();
  for (const value of (await commandStageSeconds.get()).values) {
    const stage = String(value.labels.stage);
    const total = totals.get(stage) ?? { seconds: 0, calls: 0 };
    if (value.metricName?.endsWith('_sum')) total.seconds = value.value;
    else if (value.metricName?.endsWith('_count')) total.calls = value.value;
    else continue;
    totals.set(stage, total);
  }
  return totals;
}

/**
 * Inbound SMS to the AI's reply on the log, across 50 conversations, with the fake model answering at
 * once and AI_REPLY_DELAY_SECONDS=0; beside the same model call made directly with the SDK in the same
 * run. Two spans are timed: from the webhook POST (the whole path), and from `message.received` on the
 * log to the reply on the log (the agent's own part, which is what it adds over the model call).
 *
 * Three loads: each conversation texting again the moment it is answered (a closed loop: it finds the
 * capacity, replies per second, and its latencies are mostly queueing, since 50 conversations always
 * wait on it); the same 50 conversations texting at half that capacity, at a steady rate whatever the
 * answers do (an open loop: what the agent adds to one reply under a steady load); and one
 * conversation at a time.
 */
export async function benchAi(): Promise<string> {
  const system = await startBenchSystem();
  const fake = await startFakeOpenAi();
  fake.respondWith(() => ({ text: 'Thanks! Could you send me your Email?' }));
  const agent = await startBenchAgent(system, fake);
  const replies = await watchReplies(system);
  const accounts = await createAccounts(system);
  const conversations = aiConversations(system, accounts, replies);
  const agentRows = await measureAgent(conversations);
  const directRows = await measureDirectCalls(fake, agentRows.steadyRate);
  const report = aiReport(agentRows, directRows);
  // Printed before the teardown, so a failure while stopping cannot lose the figures.
  console.log(report);
  await replies.watcher.disconnect();
  await agent.stop();
  await fake.close();
  await system.close();

  return '';
}

type FakeOpenAi = Awaited<ReturnType<typeof startFakeOpenAi>>;
type BenchAccount = { id: string; phone_number: string };

/** The AI agent on connections of its own, answered at once by the fake model, with no reply delay. */
async function startBenchAgent({ env, services }: BenchSystem, fake: FakeOpenAi) {
  const agentDb = createDb(env.config.DATABASE_URL, { maxConnections: 34 });
  const responder = createModelResponder({
    apiKey: fake.apiKey,
    baseURL: fake.baseUrl,
    model: 'bench',
    timeoutMs: 10_000,
  });
  const agent = await startAiAgent({
    ...services,
    db: agentDb,
    clock: systemClock,
    newId: newUuid,
    groupId: `${env.config.TOPIC_PREFIX}leadline.ai-agent`,
    responder,
    documents: createPostgresDocumentStore(agentDb, services.personalDataKeys),
    allowPrivateTargets: false,
    replyDelayMs: 0,
    maxMessagesPerLeadPerDay: 1_000,
    modelTimeoutMs: 10_000,
    unavailableAfterMs: 60_000,
    concurrency: 32,
  });
  return {
    async stop() {
      await agent.stop();
      await agentDb.destroy();
    },
  };
}

/**
 * Watches the log: when each inbound message and each AI reply appeared, by the inbound MessageSid (the
 * reply's correlation id). It opens no personal value: the bench's own watcher is not the product's
 * work, and decrypting every phone and body it reads would be charged to the row's CPU.
 */
async function watchReplies({ env, services }: BenchSystem) {
  const received = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const watcher = services.kafka.consumer({
    groupId: `${env.config.TOPIC_PREFIX}bench-ai-watch-${newUuid()}`,
  });
  await watcher.connect();
  await watcher.subscribe({ topic: services.topics.account, fromBeginning: false });
  // The watcher has its partitions before the measured traffic starts.
  const joined = new Promise<void>((resolve) => watcher.on(watcher.events.GROUP_JOIN, () => resolve()));
  await watcher.run({
    eachMessage: async ({ message }) => {
      const type = message.headers?.['event-type']?.toString();
      if (type !== 'message.received' && type !== 'message.outbound_requested') return;
      const event = await services.codec.decode(message.value!, { opens: () => false });
      const at = performance.now();
      if (event.type === 'message.received') received.set(event.data.provider_message_id, at);
      if (event.type === 'message.outbound_requested' && event.data.source === 'ai')
        waiting.get(event.correlation_id)?.(at);
    },
  });

  await joined;
  return { received, waiting, watcher };
}

/** The accounts the conversations text, each asking for an email. */
async function createAccounts(system: BenchSystem): Promise<BenchAccount[]> {
  const { headers } = system;
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const response = await fetch(`${system.baseUrl}/v1/accounts`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `AI bench ${i}` }),
    });
    accounts.push((await expectStatus(response, 201)) as BenchAccount);
    await fetch(`${system.baseUrl}/v1/accounts/${accounts[i]!.id}/requirements`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Email', type: 'email' }),
    });
  }
  return accounts;
}

/**
 * One exchange of a conversation: an inbound SMS posted, until the AI's reply is on the log; the
 * agent's part of each (`message.received` to the reply) is kept in `agentPart`.
 */
function aiConversations(
  system: BenchSystem,
  accounts: BenchAccount[],
  { received, waiting }: Awaited<ReturnType<typeof watchReplies>>,
) {
  const phoneOf = (conversation: number) => `+1512557${String(conversation).padStart(4, '0')}`;
  const agentPart: number[] = [];
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  let sid = 0;

  // Each conversation texts again only once its previous message is answered (as a lead would).
  async function exchange(conversation: number, round: number) {
    const messageSid = `SMai${++sid}`;
    const replied = new Promise<number>((resolve) => waiting.set(messageSid, resolve));
    const body = new URLSearchParams({
      MessageSid: messageSid,
      From: phoneOf(conversation),
      To: accounts[conversation % ACCOUNTS]!.phone_number,
      Body: `Hello, round ${round}`,
      NumMedia: '0',
    });
    const posted = await fetch(`${system.baseUrl}/twilio/sms`, { method: 'POST', headers: form, body });
    if (posted.status !== 200) throw new Error(`inbound answered ${posted.status}`);
    await posted.arrayBuffer();
    const at = await replied;
    waiting.delete(messageSid);
    agentPart.push(at - received.get(messageSid)!);
    received.delete(messageSid);
  }
  return { exchange, agentPart };
}

/** The three loads through the agent, and each stage's totals between them. */
async function measureAgent({ exchange, agentPart }: ReturnType<typeof aiConversations>) {
  const endToEndSamples: number[] = [];
  const beforeClosed = await stageTotals();
  const closedProfile = await profileWindowIfAsked('ai: 50 conversations, closed loop');
  const closedCpu = cpuWindow();
  const closedStatements = countStatements();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, conversation) => {
      for (let round = 0; round < ROUNDS; round++) {
        const t0 = performance.now();
        await exchange(conversation, round);
        endToEndSamples.push(performance.now() - t0);
      }
    }),
  );
  const endToEnd: Measurement = {
    name: `inbound webhook → AI reply on the log (${CONVERSATIONS} conversations)`,
    count: endToEndSamples.length,
    seconds: (performance.now() - started) / 1000,
    samples: endToEndSamples,
    cpu: closedCpu.stop(),
  };
  // Every statement of the process (the API, projector, inbound decider and agent all run here).
  const closedCounts = closedStatements.stop();
  const statementsPerReply = statementTotal(closedCounts) / endToEnd.count;
  if (process.env.BENCH_STATEMENTS) console.log(statementsPer(closedCounts, endToEnd.count, 'reply'));
  await closedProfile.stop();
  // The same 50 conversations at half the capacity just measured, arriving at a steady rate. A
  // conversation still waiting for its previous answer sends once that answer is in.
  const afterClosed = await stageTotals();
  const steadyRate = throughput(endToEnd) / 2;
  const steadyFrom = agentPart.length;
  const previous = new Map<number, Promise<void>>();
  const steadyEndToEnd = await measureAtRate(
    `inbound webhook → AI reply on the log (50 conversations, ${steadyRate.toFixed(0)} messages/s)`,
    STEADY_MESSAGES,
    steadyRate,
    async (index) => {
      const conversation = index % CONVERSATIONS;
      const turn = (previous.get(conversation) ?? Promise.resolve()).then(() =>
        exchange(conversation, ROUNDS + Math.floor(index / CONVERSATIONS)),
      );
      previous.set(conversation, turn);
      await turn;
    },
  );
  const steadySpan: Measurement = {
    ...steadyEndToEnd,
    name: `message.received on the log → AI reply on the log (${steadyRate.toFixed(0)} messages/s)`,
    samples: agentPart.splice(steadyFrom),
    // A span inside the row above, whose window holds its CPU.
    cpu: undefined,
  };

  const afterSteady = await stageTotals();

  // One conversation at a time: the agent's own latency without other conversations' locks and load.
  const quietFrom = agentPart.length;
  const quietCpu = cpuWindow();
  for (let round = 0; round < 20; round++) await exchange(CONVERSATIONS + 1, round);
  const quietUsed = quietCpu.stop();
  const afterQuiet = await stageTotals();
  const quietSpan: Measurement = {
    name: 'message.received → AI reply, one conversation at a time',
    count: 20,
    seconds: 1,
    samples: agentPart.splice(quietFrom),
    cpu: quietUsed,
  };
  const agentSpan: Measurement = {
    name: 'message.received on the log → AI reply on the log',
    count: agentPart.length,
    seconds: endToEnd.seconds,
    samples: agentPart,
  };
  const phases = [
    [beforeClosed, afterClosed],
    [afterClosed, afterSteady],
    [afterSteady, afterQuiet],
  ] as const;
  return {
    endToEnd,
    agentSpan,
    steadyRate,
    steadyEndToEnd,
    steadySpan,
    quietSpan,
    phases,
    statementsPerReply,
  };
}

/** The same model call, made directly with the SDK, as many times with the same concurrency. */
async function measureDirectCalls(fake: FakeOpenAi, steadyRate: number) {
  const client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  const prompt = fake.requests.at(-1)!.messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[];
  const direct = await measure(
    `the same model call with the SDK (${CONVERSATIONS} concurrent)`,
    CONVERSATIONS * ROUNDS,
    CONVERSATIONS,
    async () => {
      await client.chat.completions.create({ model: 'bench', messages: prompt });
    },
  );

  const directSteady = await measureAtRate(
    `the same model call with the SDK (${steadyRate.toFixed(0)} calls/s)`,
    STEADY_MESSAGES,
    steadyRate,
    async () => {
      await client.chat.completions.create({ model: 'bench', messages: prompt });
    },
  );

  const directOne = await measure('the same model call with the SDK, one at a time', 20, 1, async () => {
    await client.chat.completions.create({ model: 'bench', messages: prompt });
  });
  return { direct, directSteady, directOne };
}

function aiReport(
  agent: Awaited<ReturnType<typeof measureAgent>>,
  { direct, directSteady, directOne }: Awaited<ReturnType<typeof measureDirectCalls>>,
): string {
  const { endToEnd, agentSpan, steadyRate, steadyEndToEnd, steadySpan, quietSpan, phases } = agent;
  // Where the time went in each load: calls and mean ms of each stage (the command's, and the agent's own steps).
  const stageRows = [...phases[2][1].keys()].map((stage) => {
    const cells = phases.map(([from, to]) => {
      const calls = (to.get(stage)?.calls ?? 0) - (from.get(stage)?.calls ?? 0);
      const seconds = (to.get(stage)?.seconds ?? 0) - (from.get(stage)?.seconds ?? 0);
      return `${calls} | ${calls ? ((seconds / calls) * 1000).toFixed(1) : '-'}`;
    });
    return `| ${stage} | ${cells.join(' | ')} |`;
  });
  const added = percentile(agentSpan.samples, 50) - percentile(direct.samples, 50);
  const steadyAdded = percentile(steadySpan.samples, 50) - percentile(directSteady.samples, 50);
  const quietAdded = percentile(quietSpan.samples, 50) - percentile(directOne.samples, 50);
  return [
    '## AI agent',
    comparisonTable([
      { subject: endToEnd, baseline: direct },
      { subject: agentSpan, baseline: direct },
      { subject: steadyEndToEnd, baseline: directSteady },
      { subject: steadySpan, baseline: directSteady },
      { subject: quietSpan, baseline: directOne },
    ]),
    [
      '| stage | closed loop: calls | mean ms | steady rate: calls | mean ms | one at a time: calls | mean ms |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...stageRows,
    ].join('\n'),
    `Replies per second (closed loop, the capacity): ${throughput(endToEnd).toFixed(1)}, each costing ${agent.statementsPerReply.toFixed(1)} SQL statements of the system (begin and commit included). The agent adds at p50 over the model call, across ${CONVERSATIONS} conversations: ${added.toFixed(1)} ms in the closed loop, ${steadyAdded.toFixed(1)} ms at a steady ${steadyRate.toFixed(0)} messages/s; ${quietAdded.toFixed(1)} ms one conversation at a time (goal: at most 50 ms; the ops/s column of the one-at-a-time row is not meaningful).`,
  ].join('\n\n');
}
