import type { RunEvent } from '@rein/contract';
import { describe, expect, it } from 'vitest';
import { createPiiMasker } from '../src/shared/guards/pii-masker.js';
import { createDeltaPublisher } from '../src/step/delta-publisher.js';

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
    deltas.push({ content: 'ab, ' }); // a full batch: sent at once
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
    expect(appended.map((e) => e.data)).toEqual([{ text: 'ab, ' }]);
    expect(last).toMatchObject({ type: 'model.delta', runId: 'r1', step: 3, data: { text: 'ef' } });
    expect(await deltas.rest()).toBeUndefined(); // nothing left
  });

  it('never splits a phone number or an address across two events, so each event masks whole', async () => {
    const appended: RunEvent[] = [];
    const deltas = createDeltaPublisher(
      async (e) => void appended.push(e),
      'r1',
      0,
      () => {},
      { intervalMs: 60_000, maxChars: 4 },
    );
    for (const piece of ['call 1', '38 12', '34 56', '78 or', ' mail li', '.lei@exa', 'mple.com', ' thanks'])
      deltas.push({ content: piece });
    await deltas.flush();
    const texts = appended.map((e) => (e.data as { text: string }).text);
    expect(texts.join('')).toBe('call 138 1234 5678 or mail li.lei@example.com thanks');
    const masker = createPiiMasker();
    const masked = texts.map((t) => masker.maskText(t)).join('');
    expect(masked).toBe('call 138****5678 or mail l***@example.com thanks');
  });
});
