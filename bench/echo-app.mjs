import { defineAgent, defineApp, defineTool } from '@rein/core';
import { z } from 'zod';

/**
 * The bench's common agent (`REIN_APP=bench/echo-app.mjs`): one `echo` tool `{x: number}`
 * and a short system prompt. The anchors (raw loop, naive BullMQ) send the same prompt and
 * tool, exported here, so every system is given the same work.
 */
export const ECHO_PROMPT = 'You are a bench agent. Call echo until told to stop, then answer.';

const parameters = z.object({ x: z.number() });

export const ECHO_TOOLS = [
  { type: 'function', function: { name: 'echo', description: 'Echo a number back.', parameters: z.toJSONSchema(parameters) } },
];

const echo = defineTool({
  name: 'echo',
  description: 'Echo a number back.',
  kind: 'read',
  parameters,
  execute: ({ x }) => ({ x }),
});

export default defineApp({
  agents: [defineAgent({ name: 'echo', instructions: ECHO_PROMPT, tools: ['echo'], limits: { maxSteps: 50 } })],
  tools: [echo],
});
