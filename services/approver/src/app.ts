import {
  approvalStatusSchema,
  approveBodySchema,
  createApprovalService,
  createServiceApp,
  idParamsSchema,
  parseInput,
  type Runtime,
  rejectBodySchema,
} from '@rein/core';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

const listQuerySchema = z.object({
  status: approvalStatusSchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** The approver API: list, read, approve, reject. Who may decide is core's `mayDecide`. */
export function createApproverApp(rt: Runtime): FastifyInstance {
  const app = createServiceApp(rt);
  const approvals = createApprovalService({ store: rt.store, enqueue: rt.enqueue, metrics: rt.metrics, tools: rt.tools, feed: rt.feed });
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;

  app.get('/v1/approvals', async (req) => {
    const q = parseInput(listQuerySchema, req.query, 'query');
    return { approvals: await approvals.list(req.principal, q.status, q.limit) };
  });
  app.get('/v1/approvals/:id', async (req) => approvals.get(req.principal, id(req.params)));
  app.post('/v1/approvals/:id/approve', async (req) => {
    const body = parseInput(approveBodySchema, req.body, 'body');
    return approvals.decide(req.principal, id(req.params), { kind: 'approve', ...body });
  });
  app.post('/v1/approvals/:id/reject', async (req) => {
    const body = parseInput(rejectBodySchema, req.body, 'body');
    return approvals.decide(req.principal, id(req.params), { kind: 'reject', reason: body.reason });
  });
  return app;
}
