import { execFile } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, startFleet } from '../support/fleet.js';

/**
 * The app-image recipe without Docker: Rein's image file tree made by the very script
 * infra/Dockerfile runs (scripts/assemble-image.mjs), a user's app written outside the
 * repository and added the way infra/app.Dockerfile adds it (its COPY and REIN_APP), then
 * the stock services started from that tree, running the user's agent to the end.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

const USER_APP = `import { appendFileSync } from 'node:fs';
import { defineAgent, defineApp, defineTool } from '@rein/core';
import { z } from 'zod';

const lookup = defineTool({
  name: 'lookup_contact',
  description: 'Find a contact by name.',
  kind: 'read',
  parameters: z.object({ name: z.string().min(1) }),
  execute: ({ name }) => {
    appendFileSync(process.env.CONTACTS_LOG, name + '\\n');
    return { name, email: name.toLowerCase() + '@example.com' };
  },
});

export default defineApp({
  agents: [defineAgent({ name: 'contacts', instructions: 'Look the contact up and answer with their email.', tools: ['lookup_contact'] })],
  tools: [lookup],
});
`;

/** One instruction of a Dockerfile, e.g. the argument of its `ENV REIN_APP=` or `COPY . `. */
const instruction = (dockerfile: string, pattern: RegExp) => {
  const match = pattern.exec(readFileSync(join(root, 'infra', dockerfile), 'utf8'));
  if (!match?.[1]) throw new Error(`infra/${dockerfile} has no line matching ${pattern}`);
  return match[1];
};

let work: string;
let image: string;
let redis: TestRedis;
let fleet: Fleet | undefined;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'rein-app-image-'));
  image = join(work, instruction('Dockerfile', /^RUN .*node scripts\/assemble-image\.mjs (\S+)$/m).replace(/^\//, ''));
  await run(process.execPath, [join(root, 'scripts', 'assemble-image.mjs'), image], {
    cwd: root,
    env: { ...process.env, npm_config_prefer_offline: 'true' },
    timeout: 600_000,
  });
  // The user's project, outside the repository: just the app module.
  const project = join(work, 'my-agents');
  mkdirSync(project);
  writeFileSync(join(project, 'app.mjs'), USER_APP);
  // infra/app.Dockerfile: `COPY . <dir>` relative to the image's WORKDIR, then REIN_APP.
  cpSync(project, join(image, instruction('app.Dockerfile', /^COPY \. (\S+)$/m)), { recursive: true });
  redis = await startTestRedis();
}, 900_000);

afterAll(async () => {
  await fleet?.stop();
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("Rein's image file tree, with a user's app on top", () => {
  it('holds the installed packages and the licence, not the repository', () => {
    expect(readdirSync(image).sort()).toEqual(['LICENSE', 'app', 'node_modules', 'package.json']);
    for (const name of [
      'api',
      'approver',
      'cli',
      'client',
      'contract',
      'core',
      'define',
      'example-order-assistant',
      'scripted-model',
      'worker',
    ]) {
      const dir = join(image, 'node_modules', '@rein', name);
      expect(lstatSync(dir).isSymbolicLink(), name).toBe(false); // installed from its tarball, not linked to the checkout
      expect(existsSync(join(dir, 'src')), name).toBe(false);
      expect(existsSync(join(dir, 'LICENSE')), name).toBe(true);
    }
    expect(existsSync(join(image, 'node_modules', 'vitest'))).toBe(false); // production dependencies only
  });

  it("runs the user's agent on the stock services started from the tree", async () => {
    const contactsLog = join(work, 'contacts.log');
    fleet = await startFleet({
      redisUrl: redis.url,
      installed: image,
      workers: 1,
      env: {
        NODE_ENV: 'production',
        REIN_APP: instruction('app.Dockerfile', /^ENV REIN_APP=(\S+)$/m),
        CONTACTS_LOG: contactsLog,
      },
    });
    const client = fleet.client();
    const submitted = await client.runs.create({ input: 'Find "Grace"' });
    expect(submitted.agent).toBe('contacts');
    const done = await fleet.waitForRun(submitted.id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status), 120_000);
    expect(done.status).toBe('succeeded');
    expect(readFileSync(contactsLog, 'utf8').trim().split('\n')).toEqual(['Grace']);
  });
});
