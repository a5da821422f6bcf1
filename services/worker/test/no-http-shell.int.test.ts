import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The modules a fresh Node process has loaded after importing one built entry (CommonJS ones: Fastify is CommonJS). */
function loadedBy(entry: string): string[] {
  const script = `import(${JSON.stringify(entry)}).then(() => process.stdout.write(JSON.stringify(Object.keys(require.cache))))`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' })) as string[];
}

describe('the worker carries no HTTP shell', () => {
  it('loads no Fastify: the HTTP shell is @rein/core/http, which only the api and approver import', () => {
    const worker = loadedBy(join(root, 'services/worker/dist/start-worker.js'));
    expect(worker.length).toBeGreaterThan(0);
    expect(worker.filter((m) => m.includes('/fastify') || m.includes('/@fastify/'))).toEqual([]);
    // The api does load it: the check above would see it if the worker did.
    expect(loadedBy(join(root, 'services/api/dist/start-api.js')).some((m) => m.includes('/fastify'))).toBe(true);
  });
});
