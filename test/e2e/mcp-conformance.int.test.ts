import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

const here = dirname(fileURLToPath(import.meta.url));
const suite = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');

/**
 * The suite's client cannot send a header (conformance issue 453) and Rein has no way in
 * without a key: a hop on the client's side adds the key to each request, as a client
 * configured with one does, and passes the rest (Host and Origin included) through as sent.
 */
async function keyedHop(target: () => string, key: string): Promise<Server> {
  const server = createServer((req, res) => {
    const upstream = new URL(target());
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** What went wrong, from the results the suite saved: one line per failed or warned check. */
async function failedChecks(results: string): Promise<string> {
  const lines: string[] = [];
  for (const dir of await readdir(results)) {
    const checks = JSON.parse(await readFile(join(results, dir, 'checks.json'), 'utf8')) as Array<{
      id: string;
      status: string;
      errorMessage?: string;
    }>;
    for (const check of checks)
      if (check.status === 'FAILURE' || check.status === 'WARNING')
        lines.push(`${dir} ${check.id} ${check.status}: ${check.errorMessage ?? ''}`);
  }
  return lines.join('\n');
}

/**
 * The official MCP conformance suite's server scenarios, run as a child process against a
 * real fleet's `POST /mcp`; the baseline lists what Rein does not serve, and the suite
 * itself fails on any other failure and on a listed scenario that passes.
 */
describe('POST /mcp and @modelcontextprotocol/conformance', () => {
  let redis: TestRedis;
  let fleet: Fleet | undefined;
  let hop: Server;
  let mcpUrl: string;
  let results: string;
  beforeAll(async () => {
    hop = await keyedHop(() => fleet?.api ?? '', KEYS.user.key);
    const origin = `http://localhost:${(hop.address() as AddressInfo).port}`;
    mcpUrl = `${origin}/mcp`;
    redis = await startTestRedis();
    // The origin the suite's client calls from is one the operator listed (its DNS-rebinding scenario sends it).
    fleet = await startFleet({ redisUrl: redis.url, workers: 1, env: { REIN_CORS_ORIGINS: origin } });
    results = await mkdtemp(join(tmpdir(), 'rein-mcp-conformance-'));
  });
  afterAll(async () => {
    hop?.close();
    await fleet?.stop();
    await redis?.stop();
    if (results) await rm(results, { recursive: true, force: true });
  });

  it('passes every server scenario but those the baseline lists as not served', async () => {
    const baseline = join(here, 'mcp-conformance-baseline.yml');
    const child = spawn(process.execPath, [suite, 'server', '--url', mcpUrl, '--expected-failures', baseline, '-o', results], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, `${output}\n${await failedChecks(results)}`).toBe(0);
  }, 300_000);
});
