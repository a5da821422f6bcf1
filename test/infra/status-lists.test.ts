import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUN_STATUSES, runStatusSchema, TERMINAL_STATUSES, terminalStatusSchema } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { TERMINAL as clientTerminal } from '../../packages/client/src/rein-client.js';
import { STATUSES as consoleStatuses, TERMINAL as consoleTerminal } from '../../services/approver/src/console/src/format.js';

const root = join(import.meta.dirname, '../..');

/**
 * The run statuses are written once, as plain lists in the contract's `run-status.ts`: the
 * schemas are built from them, and browser code (the client, the console) imports them
 * without bundling zod. A new status is one line there.
 */
describe('the run status lists', () => {
  it('are plain lists in a contract module that imports nothing, so a browser bundle carries no zod for them', () => {
    expect(readFileSync(join(root, 'packages/contract/src/run-status.ts'), 'utf8')).not.toMatch(/^\s*import\b/m);
  });

  it('are what the schemas, the client and the console use', () => {
    expect([...runStatusSchema.options]).toEqual([...RUN_STATUSES]);
    expect([...terminalStatusSchema.options]).toEqual([...TERMINAL_STATUSES]);
    expect([...clientTerminal]).toEqual([...TERMINAL_STATUSES]);
    expect(consoleTerminal).toBe(TERMINAL_STATUSES);
    expect(consoleStatuses).toBe(RUN_STATUSES);
  });

  it('are not written out again in browser code', () => {
    const browser = ['packages/client/src/rein-client.ts', 'services/approver/src/console/src/format.ts'];
    const copies = browser.filter((f) => /'succeeded',\s*'failed'|'failed',\s*'cancelled'/.test(readFileSync(join(root, f), 'utf8')));
    expect(copies).toEqual([]);
  });
});
