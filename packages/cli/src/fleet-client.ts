import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ReinClient } from '@rein/client';
import type { Role } from '@rein/contract';
import { DEMO_KEYS } from './demo-keys.js';

/**
 * Where a running fleet is (REIN_API_URL / REIN_APPROVER_URL), and a client calling it as
 * REIN_API_KEY, else the first key of REIN_API_KEYS (or of the demo keys) holding `role`
 * when one is asked for (`rein versions`: operator), else the first key.
 */
export interface FleetClient {
  api: string;
  approver: string;
  rein: ReinClient;
}

export function fleetClient(env: NodeJS.ProcessEnv = process.env, role?: Role): FleetClient {
  const api = env.REIN_API_URL ?? `http://127.0.0.1:${env.API_PORT ?? 8080}`;
  const approver = env.REIN_APPROVER_URL ?? `http://127.0.0.1:${env.APPROVER_PORT ?? 8081}`;
  return { api, approver, rein: new ReinClient({ apiUrl: api, approverUrl: approver, apiKey: callerKey(env, role) }) };
}

/** The key the CLI calls as (see `fleetClient`). */
export function callerKey(env: NodeJS.ProcessEnv, role?: Role): string {
  if (env.REIN_API_KEY) return env.REIN_API_KEY;
  const keys = env.REIN_API_KEYS ? (JSON.parse(env.REIN_API_KEYS) as Array<{ key: string; roles?: string[] }>) : DEMO_KEYS;
  return ((role && keys.find((k) => k.roles?.includes(role))) || (keys[0] as { key: string })).key;
}

/** Uses the running fleet, or starts one (`rein dev`) and returns a function that stops it. */
export async function ensureFleet(client: FleetClient): Promise<() => void> {
  const up = () =>
    fetch(`${client.api}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
  if (await up()) return () => {};
  process.stdout.write('No fleet is running; starting one (rein dev) for this run…\n');
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const fleet = spawn(process.execPath, [main, 'dev'], { stdio: 'ignore' });
  const until = Date.now() + 30_000;
  while (!(await up())) {
    if (Date.now() > until || fleet.exitCode !== null) throw new Error('the fleet did not start; run `rein dev` to see why');
    await new Promise((r) => setTimeout(r, 250));
  }
  return () => fleet.kill('SIGTERM');
}
