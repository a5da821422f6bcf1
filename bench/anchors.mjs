import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { ECHO_PROMPT, ECHO_TOOLS } from './echo-app.mjs';

/**
 * The bench's two anchors in a process of their own (forked by step-cost.bench.test.ts),
 * so their CPU is measured like a Rein worker's: the raw fetch loop (one process, history
 * in memory: the floor) and a naive BullMQ job-per-step design (history as one JSON string
 * key, one job per step). Both send the common bench agent's prompt and `echo` tool.
 * Messages: `{raw}`, `{naiveStart}`, `{naiveSubmit}`, `{naiveStop}`, `{stop}`; each is answered
 * with the process's CPU time so far.
 */
let fakeUrl = '';
let naive;

async function complete(messages) {
  const res = await fetch(`${fakeUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench-fake', messages, tools: ECHO_TOOLS }),
  });
  return (await res.json()).choices[0].message;
}

/** One step: the model's reply and, for each tool call, the echo tool's result. */
function record(messages, message) {
  messages.push(message);
  for (const call of message.tool_calls ?? []) {
    messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(JSON.parse(call.function.arguments)) });
  }
  return (message.tool_calls?.length ?? 0) > 0;
}

const firstMessages = (input) => [
  { role: 'system', content: ECHO_PROMPT },
  { role: 'user', content: input },
];

async function rawLoop(inputs) {
  for (const input of inputs) {
    const messages = firstMessages(input);
    while (record(messages, await complete(messages))) {}
  }
}

function naiveStart(redisUrl, concurrency) {
  const client = new Redis(redisUrl);
  const queue = new Queue('naive', { connection: { url: redisUrl } });
  const worker = new Worker(
    'naive',
    async (job) => {
      const { tag, step } = job.data;
      const key = `naive:${tag}`;
      const messages = JSON.parse((await client.get(key)) ?? '[]');
      const more = record(messages, await complete(messages));
      await client.set(key, JSON.stringify(messages));
      if (more) await queue.add('step', { tag, step: step + 1 }, { jobId: `${tag}-${step + 1}`, removeOnComplete: true });
    },
    { connection: { url: redisUrl, maxRetriesPerRequest: null }, concurrency },
  );
  const submit = async (tag, input) => {
    await client.set(`naive:${tag}`, JSON.stringify(firstMessages(input)));
    await queue.add('step', { tag, step: 0 }, { jobId: `${tag}-0`, removeOnComplete: true });
  };
  const stop = async () => {
    await worker.close();
    await queue.close();
    client.disconnect();
  };
  return { submit, stop, ready: worker.waitUntilReady() };
}

process.on('message', async (msg) => {
  try {
    fakeUrl = msg.fakeUrl ?? fakeUrl;
    if (msg.raw) await rawLoop(msg.raw);
    if (msg.naiveStart) {
      naive = naiveStart(msg.naiveStart.redisUrl, msg.naiveStart.concurrency);
      await naive.ready;
    }
    if (msg.naiveSubmit) await Promise.all(msg.naiveSubmit.map(({ tag, input }) => naive.submit(tag, input)));
    if (msg.naiveStop || msg.stop) await naive?.stop();
    if (msg.naiveStop) naive = undefined;
    process.send({ id: msg.id, cpu: process.cpuUsage() });
    if (msg.stop) process.exit(0);
  } catch (err) {
    process.send({ id: msg.id, error: String(err?.stack ?? err) });
  }
});
