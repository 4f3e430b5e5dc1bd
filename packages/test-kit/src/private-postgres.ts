import { freePort } from './ports';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { eventually } from './environment';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster owned by one test, on a port and a data directory of its own: a test may stop
 * and restart it without touching the server everyone else (and the schema registry) shares.
 */
export interface PrivatePostgres {
  /** The superuser's URL of the cluster's `postgres` database; point `pathname` at another to use it. */
  url: string;
  /**
   * Stops the server (`fast`: sessions are terminated and it shuts down cleanly; `immediate`: it
   * quits at once and recovers from its WAL on start, as after a crash), stays down `downMs`, then
   * starts it again on the same port and data and waits until it accepts connections.
   */
  restart(mode: 'fast' | 'immediate', downMs?: number): Promise<void>;
  /** Stops the server and deletes its data. */
  stop(): Promise<void>;
}

/**
 * The newest installed PostgreSQL's bin directory (Debian's layout, /usr/lib/postgresql/<major>/bin),
 * or undefined where none is installed: a test then skips rather than fails.
 */
export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => existsSync(path.join(root, name, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] && path.join(root, versions[0], 'bin');
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinaries();
  if (!bin) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  // initdb and postgres refuse to run as root: as root (here and in CI) they run as the postgres user,
  // in a directory it owns.
  const asRoot = process.getuid?.() === 0;
  const command = (tool: string, args: string[]): [string, string[]] =>
    asRoot
      ? ['runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]]
      : [path.join(bin, tool), args];
  const dir = await mkdtemp(path.join(tmpdir(), 'leadline-private-postgres-'));
  if (asRoot) await chown(dir, ...postgresOwner());
  const data = path.join(dir, 'data');
  const port = await freePort();
  const pgCtl = (...args: string[]) => run(...command('pg_ctl', ['-D', data, ...args]));

  // A test that fails or is interrupted still leaves no server behind (a killed worker excepted).
  const cleanUp = () => {
    if (existsSync(path.join(data, 'postmaster.pid'))) {
      try {
        execFileSync(...command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']), {
          stdio: 'ignore',
        });
      } catch {
        // Stopped meanwhile.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanUp);

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const start = async () => {
    await pgCtl('-l', path.join(dir, 'postgres.log'), '-w', '-t', '60', 'start');
    // pg_ctl -w waits for the socket; a query proves the server takes sessions.
    await eventually(
      async () => {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined);
        try {
          await client.connect();
          await client.query('select 1');
          return true;
        } catch {
          return undefined;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, message: `private PostgreSQL on port ${port} not answering` },
    );
  };

  try {
    await run(
      ...command('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']),
    );
    // In its configuration file, so every start (a restart included) has them.
    await appendFile(
      path.join(data, 'postgresql.conf'),
      [
        `port = ${port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        'max_connections = 200',
        // The data is thrown away after the test and the machine does not crash: what a stopped or
        // killed server wrote to the operating system survives it without being flushed to disk.
        // synchronous_commit stays on: off, a commit is acknowledged before the server has written it
        // anywhere, and an immediate stop loses the last ones.
        'fsync = off',
        'full_page_writes = off',
        '',
      ].join('\n'),
    );
    await start();
  } catch (error) {
    cleanUp();
    process.off('exit', cleanUp);
    throw error;
  }

  return {
    url,
    async restart(mode, downMs = 0) {
      await pgCtl('-m', mode, '-w', '-t', '60', 'stop');
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    async stop() {
      cleanUp();
      process.off('exit', cleanUp);
    },
  };
}

/** The postgres user's uid and gid. */
function postgresOwner(): [number, number] {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return [uid, gid];
}
