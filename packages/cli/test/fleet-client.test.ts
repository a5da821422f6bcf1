import { describe, expect, it } from 'vitest';
import { DEMO_KEYS } from '../src/demo-keys.js';
import { callerKey } from '../src/fleet-client.js';

describe('the key the CLI calls as', () => {
  it('is an operator key for fleet-wide commands (rein versions), the first key otherwise', () => {
    expect(callerKey({})).toBe(DEMO_KEYS[0]?.key);
    const operator = DEMO_KEYS.find((k) => k.roles.includes('operator'));
    expect(operator).toBeDefined();
    expect(callerKey({}, 'operator')).toBe(operator?.key);
    const keys = JSON.stringify([
      { key: 'first-key-1234', tenantId: 't', userId: 'u', roles: ['admin'] },
      { key: 'ops-key-12345', tenantId: 't', userId: 'o', roles: ['operator'] },
    ]);
    expect(callerKey({ REIN_API_KEYS: keys }, 'operator')).toBe('ops-key-12345');
    expect(callerKey({ REIN_API_KEYS: keys, REIN_API_KEY: 'chosen-key-123' }, 'operator')).toBe('chosen-key-123');
  });
});
