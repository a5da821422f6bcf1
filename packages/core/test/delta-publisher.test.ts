import { describe, expect, it } from 'vitest';
import { createDeltaPublisher } from '../src/engine/delta-publisher.js';
import type { RunEvent } from '../src/schemas/event.js';

describe('the delta publisher', () => {
  it('hands back the last batch unsent, after the batches already sent have landed', async () => {
    const appended: RunEvent[] = [];
    let land: () => void = () => {};
    const append = (e: RunEvent) =>
      new Promise<void>((resolve) => {
        land = () => {
          appended.push(e);
          resolve();
        };
      });
    const deltas = createDeltaPublisher(append, 'r1', 3, () => {}, { intervalMs: 60_000, maxChars: 4 });
    deltas.push({ content: 'abcd' }); // a full batch: sent at once
    deltas.push({ content: 'ef' });
    const rest = deltas.rest();
    let handed: RunEvent | undefined | 'pending' = 'pending';
    void rest.then((e) => {
      handed = e;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(handed).toBe('pending'); // the sent batch has not landed yet
    land();
    const last = await rest;
    expect(appended.map((e) => e.data)).toEqual([{ text: 'abcd' }]);
    expect(last).toMatchObject({ type: 'model.delta', runId: 'r1', step: 3, data: { text: 'ef' } });
    expect(await deltas.rest()).toBeUndefined(); // nothing left
  });
});
