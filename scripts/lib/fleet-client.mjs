// What `npm run demo` and `npm run eval` share: find (or start) a fleet and talk to it.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_KEYS } from '../demo-keys.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const API = process.env.REIN_API_URL ?? `http://127.0.0.1:${process.env.API_PORT ?? 8080}`;
export const APPROVER = process.env.REIN_APPROVER_URL ?? `http://127.0.0.1:${process.env.APPROVER_PORT ?? 8081}`;
/** The first key of REIN_API_KEYS (or the demo user): the caller that submits and approves. */
export const KEY = (process.env.REIN_API_KEYS ? JSON.parse(process.env.REIN_API_KEYS) : DEMO_KEYS)[0].key;

const up = () =>
  fetch(`${API}/readyz`).then(
    (r) => r.ok,
    () => false,
  );

/** Uses the running fleet, or starts one (`scripts/fleet.mjs`) and returns a function that stops it. */
export async function ensureFleet() {
  if (await up()) return () => {};
  console.log('No fleet is running; starting one (npm start) for this run…');
  const fleet = spawn(process.execPath, [join(root, 'scripts/fleet.mjs')], { stdio: 'ignore' });
  const until = Date.now() + 30_000;
  while (!(await up())) {
    if (Date.now() > until || fleet.exitCode !== null) throw new Error('the fleet did not start; run `npm start` to see why');
    await new Promise((r) => setTimeout(r, 250));
  }
  return () => fleet.kill('SIGTERM');
}

export async function call(method, url, body) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
