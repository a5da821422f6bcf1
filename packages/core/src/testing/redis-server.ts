import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A Redis that a test owns: it may stop, kill and restart it. */
export interface TestRedis {
  url: string;
  port: number;
  /** Where it runs: a Docker container (testcontainers) or a local redis-server process. */
  via: 'testcontainers' | 'redis-server';
  stop(): Promise<void>;
}

export interface TestRedisOptions {
  /** Keep an append-only file, so a restart keeps the data (durability tests). */
  appendOnly?: boolean;
  /** Start as a Redis Cluster node (see startTestCluster). */
  cluster?: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listening on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

function dockerReachable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function viaTestcontainers(opts: TestRedisOptions): Promise<TestRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const args = ['redis-server', '--save', '', '--appendonly', opts.appendOnly ? 'yes' : 'no'];
  const container = await new GenericContainer('redis:7-alpine')
    .withCommand(args)
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const port = container.getMappedPort(6379);
  return {
    url: `redis://${container.getHost()}:${port}`,
    port,
    via: 'testcontainers',
    async stop() {
      await container.stop();
    },
  };
}

/** A local redis-server process on a free port; `kill`/`start` let fault tests really stop it. */
export class LocalRedis implements TestRedis {
  readonly via = 'redis-server' as const;
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'rein-redis-'));

  private constructor(
    readonly port: number,
    private readonly opts: TestRedisOptions,
    /** A cluster node's bus port: free too (the default, port + 10000, may be taken or past 65535). */
    private readonly busPort: number | undefined,
  ) {}

  static async start(opts: TestRedisOptions = {}): Promise<LocalRedis> {
    const redis = new LocalRedis(await freePort(), opts, opts.cluster ? await freePort() : undefined);
    await redis.start();
    return redis;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      this.opts.appendOnly ? 'yes' : 'no',
      '--maxmemory-policy',
      'noeviction',
      // nodes.conf sits in the node's own directory, so a restarted node keeps its identity and slots.
      ...(this.busPort
        ? [
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(this.busPort),
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '1000',
          ]
        : []),
    ];
    this.child = spawn('redis-server', args, { stdio: 'ignore' });
    const failed = new Promise<never>((_, reject) =>
      this.child?.once('error', (err) => reject(new Error(`cannot start redis-server (is Redis 7 installed?): ${err.message}`))),
    );
    await Promise.race([waitForPort(this.port), failed]);
  }

  /** SIGTERM: Redis flushes its append-only file and exits; `start()` brings it back with the data. */
  shutdown(): Promise<void> {
    return this.exit('SIGTERM');
  }

  /** SIGKILL: no shutdown save, connections drop at once. */
  kill(): Promise<void> {
    return this.exit('SIGKILL');
  }

  private async exit(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  }

  get running(): boolean {
    return Boolean(this.child && this.child.exitCode === null && this.child.signalCode === null);
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The one Redis helper for tests: testcontainers when a Docker engine is reachable,
 * a local redis-server on a free port otherwise.
 */
export async function startTestRedis(opts: TestRedisOptions = {}): Promise<TestRedis> {
  if (dockerReachable() && !process.env.REIN_TEST_NO_DOCKER) {
    try {
      return await viaTestcontainers(opts);
    } catch {
      // A socket without a working engine: fall through to the local server.
    }
  }
  return LocalRedis.start(opts);
}
