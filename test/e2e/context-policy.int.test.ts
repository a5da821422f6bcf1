import { describe, expect, it } from 'vitest';
import { fleetPerFile, KEYS } from '../support/fleet.js';

/** The order assistant's context policy through the stock fleet and the scripted model. */

interface TraceCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  outcome: string;
  observation: string;
}
interface Trace {
  status: string;
  finalAnswer: string | null;
  totalTokens: number;
  steps: Array<{ index: number; toolCalls: TraceCall[] }>;
}

const fleet = fleetPerFile({ workers: 1 });

async function finished(input: string, agent: string): Promise<Trace> {
  const submitted = await fleet().callApi('POST', '/v1/runs', KEYS.user.key, { input, agent });
  expect(submitted.status).toBe(202);
  const id = submitted.body.id as string;
  await fleet().waitForRun(id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status));
  const trace = await fleet().callApi('GET', `/v1/runs/${id}/trace`);
  return { ...(trace.body as Trace), runId: id } as Trace & { runId: string };
}

describe('context policy', () => {
  it('sends a long tool result as summary + handle, and read_result returns its full text', async () => {
    const trace = (await finished('What items are in order 2024010?', 'order-assistant')) as Trace & { runId: string };
    expect(trace.status).toBe('succeeded');
    const [lookup, read] = [trace.steps[0]?.toolCalls[0], trace.steps[1]?.toolCalls[0]];
    expect(lookup?.name).toBe('query_order');
    expect(lookup?.observation.length).toBeGreaterThan(1200);
    // The model got a summary with a handle in place of the result, and asked for the rest by it.
    const snapshots = await fleet().callApi('GET', `/v1/runs/${trace.runId}/snapshots`, KEYS.admin.key);
    const sent = JSON.stringify(snapshots.body.snapshots.find((s: { step: number }) => s.step === 1));
    expect(sent).toContain('\\"summarized\\":true');
    expect(sent).toContain(`\\"handle\\":\\"0:${lookup?.id}\\"`);
    expect(sent).not.toContain('SKU-10048');
    expect(read).toMatchObject({ name: 'read_result', arguments: { handle: `0:${lookup?.id}` }, outcome: 'ok' });
    expect(read?.observation).toBe(lookup?.observation);
    expect(trace.finalAnswer).toMatch(/48 item/);
  }, 60_000);

  it('spends fewer tokens on the same run than an agent without it, with the same answer', async () => {
    const input = 'Check order 2024010 and tell me, per policy, whether I can return it';
    const [withPolicy, without] = [await finished(input, 'order-assistant'), await finished(input, 'order-assistant-verbatim')];
    expect([withPolicy.status, without.status]).toEqual(['succeeded', 'succeeded']);
    expect(withPolicy.finalAnswer).toBe(without.finalAnswer);
    expect(withPolicy.totalTokens).toBeLessThan(without.totalTokens);
  }, 60_000);
});
