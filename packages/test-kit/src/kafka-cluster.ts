import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Admin } from 'kafkajs';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../scripts/infra/test-kafka-cluster.sh', import.meta.url));

/**
 * Three KRaft nodes owned by one test (scripts/infra/test-kafka-cluster.sh: the configuration of the
 * local cluster, `LEADLINE_KAFKA_NODES=3`), on ports of their own and state in a temp folder, so a test
 * may kill a node without touching the broker everyone else shares. Node N has Kafka node id N.
 */
export interface TestKafkaCluster {
  brokers: string[];
  /** Kills node N (1-3) with SIGKILL: no clean shutdown, no leadership handed over. */
  kill(node: number): Promise<void>;
  /** Starts every node that is not running (one killed) on its own data, and waits until it serves. */
  restart(): Promise<void>;
  /** Kills every node and removes their state. */
  dispose(): Promise<void>;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer().listen(port, '127.0.0.1');
    server.once('error', () => resolve(false));
    server.once('listening', () => server.close(() => resolve(true)));
  });

/**
 * Six consecutive free ports (three brokers, each with its controller one above). Below the ephemeral
 * range (32768 and up on Linux), so no outgoing connection takes one meanwhile.
 */
async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 6000);
    let free = true;
    for (let port = base; port < base + count && free; port++) free = await portFree(port);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

export async function startTestKafkaCluster(): Promise<TestKafkaCluster> {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'leadline-test-cluster-'));
  const basePort = await freePortRange(6);
  const script = (...args: string[]) =>
    run('bash', [SCRIPT, stateDir, String(basePort), ...args], { maxBuffer: 1 << 20 });
  // The nodes run detached (they would outlive the test): killed when the test process exits,
  // whatever way, if the test did not dispose of them.
  let disposed = false;
  const onExit = () => {
    if (!disposed) execFileSync('bash', [SCRIPT, stateDir, String(basePort), 'destroy'], { stdio: 'ignore' });
  };
  process.once('exit', onExit);
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    process.off('exit', onExit);
    await script('destroy');
  };
  try {
    await script('start');
  } catch (error) {
    await dispose();
    throw new Error(
      `the test's Kafka cluster did not start: ${(error as { stderr?: string }).stderr ?? error}`,
      { cause: error },
    );
  }
  return {
    brokers: [0, 2, 4].map((offset) => `127.0.0.1:${basePort + offset}`),
    async kill(node) {
      await script('kill-node', String(node));
    },
    async restart() {
      await script('start');
    },
    dispose,
  };
}

/** Partitions of `topics` whose in-sync replicas are fewer than their replicas, as `topic/partition`. */
export async function underReplicated(admin: Admin, topics: string[]): Promise<string[]> {
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
  return metadata.flatMap((topic) =>
    topic.partitions
      .filter((partition) => partition.isr.length < partition.replicas.length)
      .map((partition) => `${topic.name}/${partition.partitionId}`),
  );
}
