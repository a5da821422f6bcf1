import type { FastifyInstance } from 'fastify';
import { createAgUiDoor } from '../features/frontends/ag-ui-door.js';
import { createChatDoor } from '../features/frontends/chat-door.js';
import { createDoorRuns } from '../features/frontends/door-runs.js';
import { chatParamsSchema, chatRequestSchema, chatStreamParamsSchema, runAgentInputSchema } from '../policy/frontends/protocol-bodies.js';
import type { Runtime } from '../process/runtime.js';
import { parseInput } from './http-app.js';
import { apiRoutes as schemas } from './route-schemas.js';
import type { EventStreams } from './sse.js';

/**
 * The chat front ends' doors (docs/frontends.md): the AI SDK's UI message stream and
 * AG-UI. Translators over the run and approval services, under the same keys and rules as
 * `POST /v1/runs` and the approval routes; their streams share the event-stream caps.
 */
export function registerDoorRoutes(v1: FastifyInstance, rt: Runtime, streams: EventStreams): void {
  const door = createDoorRuns({ runs: rt.runs, approvals: rt.approvals });
  const chat = createChatDoor(door);
  const agUi = createAgUiDoor(door);
  const agentOf = (params: unknown) => rt.agents.get(parseInput(chatParamsSchema, params, 'path').agent).name; // 400 unknown_agent

  v1.post('/v1/chat/:agent', { schema: schemas.chat }, async (req, reply) => {
    const agent = agentOf(req.params);
    const sent = await chat.send(req.principal, agent, parseInput(chatRequestSchema, req.body, 'body'));
    const { onAbort } = sent;
    if (onAbort)
      reply.raw.on('close', () => {
        // Closed before the stream's end was written: the client went away.
        if (!reply.raw.writableEnded) onAbort().catch((err) => req.log.warn({ err }, 'could not cancel the chat run'));
      });
    await streams.serve(reply, req.principal, sent.source, sent.from, sent.frames);
  });

  v1.get('/v1/chat/:agent/:id/stream', { schema: schemas.chatStream }, async (req, reply) => {
    const { agent, id } = parseInput(chatStreamParamsSchema, req.params, 'path');
    const live = await chat.reconnect(req.principal, rt.agents.get(agent).name, id);
    if (!live) return reply.status(204).send();
    await streams.serve(reply, req.principal, live.source, live.from, live.frames);
  });

  v1.post('/v1/ag-ui/:agent', { schema: schemas.agUi }, async (req, reply) => {
    const agent = agentOf(req.params);
    const stream = await agUi.run(req.principal, agent, parseInput(runAgentInputSchema, req.body, 'body'));
    await streams.serve(reply, req.principal, stream.source, stream.from, stream.frames);
  });
}
