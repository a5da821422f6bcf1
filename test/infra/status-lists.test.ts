import { runStatusSchema, TERMINAL_STATUSES } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { TERMINAL as clientTerminal } from '../../packages/client/src/rein-client.js';
import { STATUSES as consoleStatuses, TERMINAL as consoleTerminal } from '../../services/approver/src/console/src/format.js';

/**
 * Browser code writes the contract's status lists out (importing them would bundle zod);
 * everything else imports them. A new status breaks this test until the copies follow.
 */
describe('the run status lists written out for browsers', () => {
  it('equal the contract’s', () => {
    expect([...clientTerminal]).toEqual([...TERMINAL_STATUSES]);
    expect(consoleTerminal).toEqual([...TERMINAL_STATUSES]);
    expect([...consoleStatuses].sort()).toEqual([...runStatusSchema.options].sort());
  });
});
