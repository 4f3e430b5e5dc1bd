import { freePort } from './ports';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createKafka } from '@leadline/runtime';
import { eventually } from './environment';

const run = promisify(execFile);
const INFRA_LIB = fileURLToPath(new URL('../../../scripts/infra/lib.sh', import.meta.url));

/**
 * A single-node Kafka broker owned by one test, on ports of its own and a data directory in a temp
 * folder: a test may kill, freeze and restart it without touching the broker everyone else shares.
 * Runs from the jars `scripts/infra/up.sh` cached (the shared infrastructure is up, so they are there).
 */
export interface PrivateKafka {
  brokers: string[];
  /** Kills the broker (SIGKILL: no clean shutdown), as a crash would. */
  kill(): Promise<void>;
  /** Freezes the broker (SIGSTOP): its sockets stay open and nothing answers. */
  freeze(): void;
  thaw(): void;
  /** Starts it again on the same ports and data, and waits until it serves clients. */
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** Where up.sh keeps the broker's jars and logging configuration, asked of its own settings. */
async function kafkaInstall() {
  const { stdout } = await run('bash', [
    '-c',
    'source "$0" && printf "%s\\n%s" "$KAFKA_LIBS" "$KAFKA_LOG4J"',
    INFRA_LIB,
  ]);
  const [libs, log4j] = stdout.split('\n');
  return { libs: libs!, log4j: log4j! };
}

export async function startPrivateKafka(): Promise<PrivateKafka> {
  const { libs, log4j } = await kafkaInstall();
  const dir = await mkdtemp(path.join(tmpdir(), 'leadline-private-kafka-'));
  const [port, controllerPort] = [await freePort(), await freePort()];
  const config = path.join(dir, 'server.properties');
  await writeFile(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      `log.dirs=${path.join(dir, 'data')}`,
      'auto.create.topics.enable=false',
      'num.partitions=1',
      'log.retention.ms=-1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=1',
      'group.initial.rebalance.delay.ms=0',
      '',
    ].join('\n'),
  );
  const java = (heap: string) => [`-Xmx${heap}`, '-cp', `${libs}/*`, `-Dlog4j.configuration=file:${log4j}`];
  const { stdout: clusterId } = await run('java', [
    ...java('128m'),
    'kafka.tools.StorageTool',
    'random-uuid',
  ]);
  await run('java', [
    ...java('128m'),
    'kafka.tools.StorageTool',
    'format',
    '-t',
    clusterId.trim().split('\n').pop()!,
    '-c',
    config,
    '--ignore-formatted',
  ]);

  const brokers = [`127.0.0.1:${port}`];
  const log = createWriteStream(path.join(dir, 'kafka.log'), { flags: 'a' });
  let broker: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function start() {
    broker = spawn('java', [...java('384m'), '-Djava.awt.headless=true', 'kafka.Kafka', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    broker.stdout!.pipe(log, { end: false });
    broker.stderr!.pipe(log, { end: false });
    const child = broker;
    exited = new Promise((resolve) => child.once('exit', () => resolve()));
    // Ready once it serves metadata; a broker on a loaded machine may take many seconds. The port is
    // watched first, so the client's own retries (and their error logs) start only once it listens.
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the private broker exited; see ${dir}/kafka.log`);
        return (await portOpen(port)) || undefined;
      },
      { timeoutMs: 90_000, intervalMs: 200, message: `private Kafka on ${brokers[0]} not listening` },
    );
    const admin = createKafka(brokers, 'private-kafka-probe').admin();
    try {
      await admin.connect();
      await admin.describeCluster();
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async function kill() {
    if (!broker || broker.exitCode !== null) return;
    broker.kill('SIGCONT');
    broker.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    brokers,
    kill,
    freeze: () => void broker?.kill('SIGSTOP'),
    thaw: () => void broker?.kill('SIGCONT'),
    async restart() {
      await kill();
      await start();
    },
    async dispose() {
      await kill();
      log.end();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
