import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const rein = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'cli', 'dist', 'main.js');
const fleet = fleetPerFile();

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [rein, ...args], {
      env: {
        ...process.env,
        REIN_API_URL: fleet().api,
        REIN_APPROVER_URL: fleet().approver,
        // The user's key first: the run is theirs; the approval goes to a key with a deciding role.
        REIN_API_KEYS: JSON.stringify(Object.values(KEYS)),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** What `npm run demo -- --tree` runs (`rein run --approve` on the order desk), checked for the truth of what it prints. */
describe('rein run --approve on a tree of agents (the demo)', () => {
  it("decides as an approver, prints the sub-agent's steps under it, and ends with the run's own final answer", async () => {
    const out = await cli(['run', 'Ask the refunds agent about late order 2024001', '--agent', 'order-desk', '--approve']);
    expect(out.status).toBe(0);
    // A person with a deciding role decided, never the requester.
    expect(out.stdout).toMatch(/\[Decision\] approved by (lisi|wangwu)/);
    expect(out.stdout).not.toMatch(/approved by zhangsan/);
    expect(out.stdout).toMatch(/↳ --- sub-agent run [0-9a-f-]{8} · step 1 ---/);
    expect(out.stdout).toMatch(/final answer \(succeeded, completed\):\n\S/);
    expect(out.stdout).not.toMatch(/final answer \(running\)/);
  }, 120_000);
});
