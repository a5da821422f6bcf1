import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, KEYS, startFleet } from '../support/fleet.js';

let redis: TestRedis;
let fleet: Fleet;
let folder: string;
beforeAll(async () => {
  redis = await startTestRedis();
  folder = mkdtempSync(join(tmpdir(), 'rein-files-e2e-'));
  fleet = await startFleet({ redisUrl: redis.url, workers: 1, env: { REIN_APP: '@rein/example-mcp-filesystem', MCP_FILES_DIR: folder } });
});
afterAll(async () => {
  await fleet?.stop();
  await redis.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe('examples/mcp-filesystem: the published filesystem MCP server on the fleet', () => {
  it('reads freely and writes a file only after an approver says yes', async () => {
    const file = join(folder, 'hello.txt');
    const submitted = await fleet.callApi('POST', '/v1/runs', KEYS.user.key, { input: `Save a note as "${file}"` });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    const parked = await fleet.waitForRun(id, (r) => r.status === 'pending_approval');
    expect(parked.pendingApprovals).toMatchObject([{ toolName: 'files__write_file', risk: 'high', requiredRole: 'approver' }]);
    expect(existsSync(file)).toBe(false); // nothing written before approval

    const approval = (parked.pendingApprovals as Array<{ id: string }>)[0]?.id;
    expect((await fleet.callApprover('POST', `/v1/approvals/${approval}/approve`, KEYS.approver.key, {})).status).toBe(200);
    await fleet.waitForRun(id, (r) => r.status === 'succeeded');
    expect(readFileSync(file, 'utf8')).toBe(file); // the scripted model writes the quoted phrase

    const trace = (await fleet.callApi('GET', `/v1/runs/${id}/trace`)).body as { steps: Array<{ toolCalls: Array<{ name: string }> }> };
    expect(trace.steps.flatMap((s) => s.toolCalls.map((c) => c.name))).toEqual([
      'files__list_directory',
      'files__read_text_file',
      'files__write_file',
    ]);
  });
});
