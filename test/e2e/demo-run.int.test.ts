import { describe, expect, it } from 'vitest';
import { runRein } from '../../packages/cli/test/rein-process.js';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const fleet = fleetPerFile();

const cli = (args: string[]) =>
  runRein(args, {
    REIN_API_URL: fleet().api,
    REIN_APPROVER_URL: fleet().approver,
    // The user's key first: the run is theirs; the approval goes to a key with a deciding role.
    REIN_API_KEYS: JSON.stringify(Object.values(KEYS)),
  });

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
