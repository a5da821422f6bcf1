import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

const app = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'structured-output-app.mjs');

const fleet = fleetPerFile({ workers: 1, env: { REIN_APP: app } });

async function finished(input: string) {
  const submitted = await fleet().callApi('POST', '/v1/runs', KEYS.user.key, { input });
  expect(submitted.status).toBe(202);
  const id = submitted.body.id as string;
  const run = await fleet().waitForRun(id, (r) => r.status === 'succeeded' || r.status === 'failed');
  const snapshots = (await fleet().callApi('GET', `/v1/runs/${id}/snapshots`, KEYS.admin.key)).body.snapshots as Array<{
    request: { responseFormat?: { name: string; schema: { properties?: Record<string, unknown> } } };
  }>;
  return { run, snapshots };
}

describe('structured output, through the fleet', () => {
  it('asks for the schema with response_format and puts the parsed answer in the run view as `output`', async () => {
    const { run, snapshots } = await finished('Do you ship abroad?');
    expect(run).toMatchObject({ status: 'succeeded', reason: 'completed', step: 1 });
    expect(run.output).toEqual({ summary: expect.any(String), category: 'question', confidence: 1 });
    expect(JSON.parse(run.finalAnswer as string)).toEqual(run.output);
    expect(snapshots[0]?.request.responseFormat?.schema.properties).toHaveProperty('category');
  });

  it('gives an invalid answer one repair turn with the validation error as feedback', async () => {
    const { run, snapshots } = await finished('Do you ship abroad? [invalid-output]');
    expect(run).toMatchObject({ status: 'succeeded', reason: 'completed', step: 2 });
    expect(run.output).toMatchObject({ category: 'question' });
    expect(snapshots).toHaveLength(2);
    const repair = (snapshots[1] as unknown as { request: { messages: Array<{ role: string; content: string }> } }).request.messages.at(-1);
    expect(repair).toMatchObject({ role: 'user', content: expect.stringContaining('did not match the required output schema') });
  });

  it('ends the run output_invalid when the repaired answer is still invalid', async () => {
    const { run } = await finished('Do you ship abroad? [invalid-output-always]');
    expect(run).toMatchObject({ status: 'failed', reason: 'output_invalid', step: 2 });
    expect(run.output).toBeUndefined();
  });
});
