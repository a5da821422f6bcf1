import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReinClient } from '../src/index.js';

const event = (id: string, type: string, runId: string) =>
  `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, runId, at: '2026-12-05T00:00:00.000Z', data: {} })}\n\n`;

/** A parent's event stream as the API serves it: its sub-agent's events are in it too, the child's end included. */
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(event('1-0', 'run.queued', 'parent'));
    res.write(event('2-0', 'run.finished', 'child'));
    res.write(event('3-0', 'step.finished', 'parent'));
    res.write(event('4-0', 'run.finished', 'parent'));
    res.write(event('5-0', 'run.queued', 'after'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('runs.stream', () => {
  it("ends at the run's own run.finished, not at a sub-agent's", async () => {
    const seen: string[] = [];
    for await (const { event: e } of new ReinClient({ apiUrl: url, apiKey: 'k' }).runs.stream('parent')) seen.push(`${e.runId} ${e.type}`);
    expect(seen).toEqual(['parent run.queued', 'child run.finished', 'parent step.finished', 'parent run.finished']);
  });
});
