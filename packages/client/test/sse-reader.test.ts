import { describe, expect, it } from 'vitest';
import { readSse } from '../src/sse-reader.js';

/** A body delivered in the given chunks, as a network would split it. */
const body = (...chunks: Array<string | Uint8Array>) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(typeof c === 'string' ? new TextEncoder().encode(c) : c);
      controller.close();
    },
  });

const read = async (stream: ReadableStream<Uint8Array>) => {
  const out = [];
  for await (const m of readSse(stream)) out.push(m);
  return out;
};

describe('readSse', () => {
  it('parses events split anywhere across chunks, skipping comments and heartbeats', async () => {
    const text =
      ': rein events\n\nid: 1-0\nevent: run.queued\ndata: {"a":1}\n\n: heartbeat\n\nid: 1-1\nevent: run.finished\ndata: {"b":"中文"}\n\n';
    const bytes = new TextEncoder().encode(text);
    // Split inside a multi-byte character too: the decoder must carry it over.
    const stream = body(bytes.slice(0, 7), bytes.slice(7, 50), bytes.slice(50, bytes.length - 8), bytes.slice(bytes.length - 8));
    expect(await read(stream)).toEqual([
      { id: '1-0', event: 'run.queued', data: '{"a":1}' },
      { id: '1-1', event: 'run.finished', data: '{"b":"中文"}' },
    ]);
  });

  it('accepts CRLF line ends and joins multi-line data with newlines', async () => {
    expect(await read(body('id: 2-0\r\ndata: first\r\ndata: second\r\n\r\n'))).toEqual([
      { id: '2-0', event: undefined, data: 'first\nsecond' },
    ]);
  });

  it('drops an event cut off before its blank line (the reconnect asks for it again)', async () => {
    expect(await read(body('id: 3-0\ndata: {}\n\nid: 3-1\ndata: {"partial":'))).toEqual([{ id: '3-0', event: undefined, data: '{}' }]);
  });
});
