import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('npm run eval', () => {
  const fleet = fleetPerFile();

  it('passes every scenario class against the scripted model', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'scripts/eval.mjs'), '--strict'], {
      env: { ...process.env, REIN_API_URL: fleet().api, REIN_APPROVER_URL: fleet().approver, REIN_API_KEYS: JSON.stringify([KEYS.user]) },
    });
    for (const c of [
      'pure_question',
      'multi_step_chain',
      'forbidden_tool',
      'write_approval',
      'runaway_loop',
      'token_hog',
      'long_tool_result',
    ]) {
      expect(stdout).toMatch(new RegExp(`${c}\\s+(\\d+)/\\1\\s+100%`));
    }
    expect(stdout).not.toContain('FAIL');
    // The context policy's savings on long tool results, measured against the same runs without it.
    const [, withPolicy, without] = /Context policy on long tool results: (\d+) tokens with it, (\d+) without/.exec(stdout) ?? [];
    expect(Number(withPolicy)).toBeLessThan(Number(without));
  }, 120_000);
});
