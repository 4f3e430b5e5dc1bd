import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  connectCommandServices,
  newUuid,
  type CommandServices,
  type InfrastructureConfig,
} from '@leadline/runtime';
import { freePort, twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import { generateApiKey } from '../services/command-api/src/partners/api-keys';
import { createPartner } from '../services/command-api/src/partners/partners';

/**
 * Every service as it runs in production: each its own process started from its main module, and
 * `instances` processes of each (two command APIs behind one public URL, two projectors, two inbound
 * deciders, two SMS gateways, two sequencers, two webhook relays, two AI agents with the offline
 * responder), each consumer pair sharing its consumer group. Twilio is the given fake.
 */
export interface Cluster {
  /** One base URL per command API process (`http://127.0.0.1:PORT`); any of them answers anything. */
  apiUrls: string[];
  /** The URL Twilio is given (behind a load balancer in production): what inbound SMS are signed with. */
  publicUrl: string;
  /** A partner registered before the services started. */
  partnerKey: string;
  /** Connections of the launcher's own, to register more partners or read what a test needs. */
  services: CommandServices;
  /**
   * Posts an inbound SMS to the `instance`-th API (modulo their number), signed as Twilio signs it for
   * the public URL; returns the answer and the MessageSid.
   */
  inboundSms(
    instance: number,
    sms: { to: string; from: string; body: string },
  ): Promise<{ status: number; text: string; sid: string }>;
  /** What every process wrote on stderr, by process name (`command-api#1`…): for failure messages. */
  output(): string;
  /** The processes that have exited (or died of a signal) since they started, by name, with how. */
  exited(): string[];
  close(): Promise<void>;
}

export interface ClusterOptions {
  config: InfrastructureConfig;
  twilio: FakeTwilio;
  /** Processes of each service; 2 by default. */
  instances?: number;
  /** Extra environment for every process (SEQUENCE_HOUR_SECONDS, NODE_EXTRA_CA_CERTS…). */
  env?: Record<string, string>;
}

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

/** Each service's main module and the consumer group its processes share (none for the API). */
const SERVICES: { name: string; main: string; group?: string }[] = [
  { name: 'projector', main: 'services/projector/src/main.ts', group: 'leadline.projector' },
  { name: 'command-api', main: 'services/command-api/src/main.ts' },
  {
    name: 'inbound-decider',
    main: 'services/inbound-decider/src/main.ts',
    group: 'leadline.inbound-decider',
  },
  { name: 'sms-gateway', main: 'services/sms-gateway/src/main.ts', group: 'leadline.sms-gateway' },
  { name: 'sequencer', main: 'services/sequencer/src/main.ts', group: 'leadline.sequencer' },
  { name: 'webhook-relay', main: 'services/webhook-relay/src/main.ts', group: 'leadline.webhook-relay' },
  { name: 'ai-agent', main: 'services/ai-agent/src/main.ts', group: 'leadline.ai-agent' },
];

/** The environment of the parent without what would change a service's behaviour unasked. */
function baseEnvironment(): NodeJS.ProcessEnv {
  const {
    PARTNER_API_KEY: _key,
    OPENAI_API_KEY: _openai,
    METRICS_PORT: _metrics,
    PORT: _port,
    NODE_ENV: _nodeEnv,
    ...rest
  } = process.env;
  return rest;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const { config, twilio } = options;
  const instances = options.instances ?? 2;
  // The database migrated, the topics and schemas created once, before any process races to.
  const services = await connectCommandServices(
    { ...config, PROJECTION_WAIT_MS: 30_000 },
    'leadline-cluster',
  );
  const partnerKey = generateApiKey();
  await createPartner({ ...services, newId: newUuid }, 'Cluster partner', partnerKey);

  const ports = await Promise.all(Array.from({ length: instances }, freePort));
  const apiUrls = ports.map((port) => `http://127.0.0.1:${port}`);
  const publicUrl = apiUrls[0]!;
  const shared: NodeJS.ProcessEnv = {
    ...baseEnvironment(),
    DATABASE_URL: config.DATABASE_URL,
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
    TOPIC_PREFIX: config.TOPIC_PREFIX,
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_BASE_URL: twilio.baseUrl,
    PUBLIC_URL: publicUrl,
    RATE_LIMIT_PER_MINUTE: '10000000',
    // Webhook receivers and context pages on this machine.
    ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    PROJECTION_WAIT_MS: '30000',
    EVENT_LOG_TIMEOUT_MS: '10000',
    // Each account's number carries its burst at once: the cluster's tests and the mixed bench measure the
    // system, not the carriers' pace (the gateway's pacing has tests and a bench row of its own).
    SMS_MESSAGES_PER_SECOND: '100',
    LOG_LEVEL: 'warn',
    ...options.env,
  };

  const processes: { name: string; child: ChildProcess; output: string[] }[] = [];
  const stopped = new Set<ChildProcess>();
  for (const service of SERVICES) {
    for (let i = 0; i < instances; i++) {
      const child = spawn(process.execPath, ['--import', 'tsx', service.main], {
        cwd: repoRoot,
        env: { ...shared, ...(service.name === 'command-api' && { PORT: String(ports[i]) }) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const entry = { name: `${service.name}#${i + 1}`, child, output: [] as string[] };
      child.stderr!.on('data', (chunk: Buffer) => {
        entry.output.push(chunk.toString());
        // Keep the tail only: a long run must not grow without bound.
        if (entry.output.length > 200) entry.output.splice(0, entry.output.length - 200);
      });
      processes.push(entry);
    }
  }
  const output = () =>
    processes
      .map(({ name, child, output: lines }) => {
        const exit = child.exitCode === null ? '' : ` (exited ${child.exitCode})`;
        return `--- ${name}${exit}\n${lines.join('')}`;
      })
      .join('\n');

  const close = async () => {
    await Promise.all(
      processes.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null || stopped.has(child)) return;
        stopped.add(child);
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(killer);
      }),
    );
    await services.close();
  };

  try {
    await waitFor(
      async () => {
        const dead = processes.find(({ child }) => child.exitCode !== null);
        if (dead) throw new Error(`${dead.name} exited with ${dead.child.exitCode}`);
        const ready = await Promise.all(
          apiUrls.map((url) =>
            fetch(`${url}/health/ready`)
              .then((response) => response.ok)
              .catch(() => false),
          ),
        );
        if (!ready.every(Boolean)) return false;
        // Every consumer process has joined its group: each has partitions (or could have them).
        const groups = SERVICES.flatMap((service) =>
          service.group ? [`${config.TOPIC_PREFIX}${service.group}`] : [],
        );
        const described = await services.admin.describeGroups(groups);
        return described.groups.every(
          (group) => group.state === 'Stable' && group.members.length === instances,
        );
      },
      180_000,
      'the cluster never became ready',
    );
  } catch (error) {
    await close();
    throw new Error(`${(error as Error).message}\n${output()}`, { cause: error });
  }
  async function inboundSms(instance: number, sms: { to: string; from: string; body: string }) {
    const sid = `SM${newUuid().replaceAll('-', '')}`;
    const params = {
      MessageSid: sid,
      AccountSid: twilio.accountSid,
      From: sms.from,
      To: sms.to,
      Body: sms.body,
      NumMedia: '0',
    };
    const response = await fetch(`${apiUrls[instance % apiUrls.length]}/twilio/sms`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(twilio.authToken, `${publicUrl}/twilio/sms`, params),
      },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, text: await response.text(), sid };
  }
  const exited = () =>
    processes.flatMap(({ name, child }) =>
      child.exitCode !== null || child.signalCode !== null
        ? [`${name} exited (${child.exitCode ?? child.signalCode})`]
        : [],
    );
  return { apiUrls, publicUrl, partnerKey, services, inboundSms, output, exited, close };
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, message: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${message}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
