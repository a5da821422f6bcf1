import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitForPort } from './redis-server.js';

/** A PostgreSQL database that a test file owns: fresh, dropped (or its server stopped) by `stop`. */
export interface TestPostgres {
  url: string;
  /** A testcontainers container, a fresh database on the shared server, or a server of its own. */
  via: 'testcontainers' | 'shared-server' | 'postgres';
  stop(): Promise<void>;
}

/** The shared server every development machine and CI runs (trust authentication). */
const SHARED_URL = process.env.REIN_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function dockerReachable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function viaTestcontainers(): Promise<TestPostgres> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('postgres:16-alpine')
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'test' })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  return {
    url: `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/test`,
    via: 'testcontainers',
    async stop() {
      await container.stop();
    },
  };
}

/** Runs one statement on the server's maintenance connection (CREATE/DROP DATABASE cannot run in a pool's transaction). */
async function onServer(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A uniquely named database on the shared server, dropped (with whatever still connects to it) by `stop`. */
async function freshDatabase(serverUrl: string): Promise<TestPostgres> {
  const name = `rein_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    via: 'shared-server',
    stop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * The one PostgreSQL helper for tests: testcontainers when a Docker engine is reachable,
 * else a fresh database on the shared server (REIN_TEST_POSTGRES_URL, default
 * 127.0.0.1:5432/test). With neither, null and a visible notice so the suite skips —
 * except under CI=true, where it fails (`.ci/run` makes sure a server is running).
 */
export async function startTestPostgres(suite: string): Promise<TestPostgres | null> {
  if (dockerReachable() && !process.env.REIN_TEST_NO_DOCKER) {
    try {
      return await viaTestcontainers();
    } catch {
      // A socket without a working engine: fall through to the shared server.
    }
  }
  try {
    return await freshDatabase(SHARED_URL);
  } catch (err) {
    const what = `${suite} needs PostgreSQL at ${SHARED_URL} (${(err as Error).message})`;
    if (process.env.CI === 'true') throw new Error(`${what}, and CI=true: start it instead of skipping`);
    process.stderr.write(`\n[rein tests] SKIPPED: ${what}\n`);
    return null;
  }
}

/** Whether the server binaries are there, with startTestPostgres's notice when not (and its failure under CI=true). */
export function hasPostgresBinaries(suite: string): boolean {
  if (postgresBinDir()) return true;
  const what = `${suite} needs the PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)`;
  if (process.env.CI === 'true') throw new Error(`${what}, and CI=true: install them instead of skipping`);
  process.stderr.write(`\n[rein tests] SKIPPED: ${what}\n`);
  return false;
}

/** The PostgreSQL server binaries (Debian's postgresql package), newest version first; null if none. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/**
 * A PostgreSQL server of the test's own on a free port (initdb into a temporary directory,
 * then `postgres`), that fault tests may kill and start again with its data. As root it
 * runs as the `postgres` user: the server refuses to run as root.
 */
export class LocalPostgres implements TestPostgres {
  readonly via = 'postgres' as const;
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly bin: string,
    private readonly dir: string,
    private readonly owner: { uid: number; gid: number } | undefined,
  ) {}

  static async start(): Promise<LocalPostgres> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)');
    const dir = mkdtempSync(join(tmpdir(), 'rein-postgres-'));
    const owner =
      process.getuid?.() === 0
        ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) }
        : undefined;
    if (owner) chownSync(dir, owner.uid, owner.gid);
    execFileSync(join(bin, 'initdb'), ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'], {
      stdio: 'ignore',
      ...owner,
    });
    const server = new LocalPostgres(await freePort(), bin, dir, owner);
    await server.start();
    await onServer(server.adminUrl, 'CREATE DATABASE test');
    return server;
  }

  private get adminUrl() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/test`;
  }

  /** Starts the server on its port and data directory, and waits until it answers queries. */
  async start(): Promise<void> {
    const args = [
      '-D',
      join(this.dir, 'data'),
      '-p',
      String(this.port),
      '-k',
      this.dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
    ];
    // Its own process group, so a kill reaches the backends too (an orphaned backend would keep the shared memory and block the restart).
    this.child = spawn(join(this.bin, 'postgres'), args, { stdio: 'ignore', detached: true, ...this.owner });
    const failed = new Promise<never>((_, reject) =>
      this.child?.once('error', (err) => reject(new Error(`cannot start postgres: ${err.message}`))),
    );
    await Promise.race([waitForPort(this.port, 30_000), failed]);
    // The port opens before recovery ends: ask until it answers.
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        await onServer(this.adminUrl, 'SELECT 1');
        return;
      } catch (err) {
        if (Date.now() > until) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** SIGKILL: connections drop at once; the next start recovers from the WAL. */
  kill(): Promise<void> {
    return this.exit('SIGKILL');
  }

  /** SIGINT: the fast shutdown (open transactions are rolled back, clients disconnected). */
  shutdown(): Promise<void> {
    return this.exit('SIGINT');
  }

  private async exit(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      if (signal === 'SIGKILL' && child.pid) process.kill(-child.pid, signal);
      else child.kill(signal);
    });
  }

  get running(): boolean {
    return Boolean(this.child && this.child.exitCode === null && this.child.signalCode === null);
  }

  async stop(): Promise<void> {
    await this.shutdown();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
