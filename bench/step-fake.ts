import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A zero-latency OpenAI-compatible model for the benchmark: a run's input names its tag
 * and K (`bench <tag> k=<K>`); the model calls a tool with fresh arguments K−1 times,
 * then answers: `echo {x}` when the request offers `echo` (the common bench agent,
 * `echo-app.mjs`), `search_policy {query}` otherwise (the demo agent). It notes when each call arrives, per run, so that a step is
 * measured the same way for every system: the interval between two consecutive calls.
 */
export interface StepFake {
  url: string;
  /** Arrival times (ms, performance.now) of each run's model calls. */
  arrivals: Map<string, number[]>;
  /** Resolves when the run with this tag has had its final (answering) call. */
  answered(tag: string): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

export const benchInput = (tag: string, k: number) => `bench ${tag} k=${k}`;

interface Message {
  role: string;
  content?: string | null;
}

type BenchTool = 'echo' | 'search_policy';
const toolCall = (tool: BenchTool, n: number) =>
  tool === 'echo'
    ? { name: 'echo', arguments: JSON.stringify({ x: n }) }
    : { name: 'search_policy', arguments: JSON.stringify({ query: `refund rule ${n}` }) };

/** The reply for the n-th call (0-based) of a run of K steps. */
export function fakeReply(tag: string, k: number, n: number, tool: BenchTool = 'search_policy') {
  const answer = n >= k - 1;
  return {
    id: `chatcmpl-${tag}-${n}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'bench-fake',
    choices: [
      {
        index: 0,
        finish_reason: answer ? 'stop' : 'tool_calls',
        message: answer
          ? { role: 'assistant', content: `done after ${n} searches` }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: `call_${n}`,
                  type: 'function',
                  function: toolCall(tool, n),
                },
              ],
            },
      },
    ],
    usage: { prompt_tokens: 50 + 20 * n, completion_tokens: 12, total_tokens: 62 + 20 * n },
  };
}

/** A reply as OpenAI streams it (`stream: true`): text in 4-character pieces, like tokens, then usage and [DONE]. */
function asChunks(reply: ReturnType<typeof fakeReply>): string {
  const { message, finish_reason } = reply.choices[0] as {
    message: { content: string | null; tool_calls?: unknown[] };
    finish_reason: string;
  };
  const base = { id: reply.id, object: 'chat.completion.chunk', created: reply.created, model: reply.model };
  const chunk = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const text = message.content ?? '';
  const pieces = Array.from({ length: Math.ceil(text.length / 4) }, (_, i) => chunk({ content: text.slice(i * 4, i * 4 + 4) }));
  const calls = (message.tool_calls ?? []).map((c, index) => chunk({ tool_calls: [{ index, ...(c as object) }] }));
  return [
    chunk({ role: 'assistant', content: '' }),
    ...pieces,
    ...calls,
    chunk({}, finish_reason),
    `data: ${JSON.stringify({ ...base, choices: [], usage: reply.usage })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');
}

/** Tag and K of a request, from its first user message. */
export function parseBenchInput(messages: Message[]): { tag: string; k: number } | null {
  const first = messages.find((m) => m.role === 'user')?.content ?? '';
  const match = /bench (\S+) k=(\d+)/.exec(first);
  return match ? { tag: match[1] as string, k: Number(match[2]) } : null;
}

export async function startStepFake(): Promise<StepFake> {
  const arrivals = new Map<string, number[]>();
  const waiters = new Map<string, () => void>();
  const done = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
        messages?: Message[];
        stream?: boolean;
        tools?: Array<{ function?: { name?: string } }>;
      };
      const bench = parseBenchInput(body.messages ?? []);
      if (!bench) {
        res.writeHead(400).end('{"error":{"message":"not a bench run"}}');
        return;
      }
      const seen = arrivals.get(bench.tag) ?? [];
      seen.push(at);
      arrivals.set(bench.tag, seen);
      // The n-th call of this run, counted here: the history the model sees may have its
      // oldest turns summarised (the demo agent's context policy), so it cannot be counted.
      const n = seen.length - 1;
      const tool = body.tools?.some((t) => t.function?.name === 'echo') ? 'echo' : 'search_policy';
      const reply = fakeReply(bench.tag, bench.k, n, tool);
      if (body.stream) res.writeHead(200, { 'content-type': 'text/event-stream' }).end(asChunks(reply));
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      if (n >= bench.k - 1) {
        done.add(bench.tag);
        waiters.get(bench.tag)?.();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    arrivals,
    answered: (tag) => (done.has(tag) ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(tag, resolve))),
    reset() {
      arrivals.clear();
      done.clear();
      waiters.clear();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Intervals between consecutive calls of each run: the per-step latency. */
export function stepIntervals(arrivals: Map<string, number[]>): number[] {
  return [...arrivals.values()].flatMap((times) => times.slice(1).map((t, i) => t - (times[i] as number)));
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}
