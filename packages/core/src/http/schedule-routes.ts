import { createScheduleBodySchema, patchScheduleBodySchema } from '@rein/contract';
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../process/runtime.js';
import { parseInput } from './http-app.js';
import { receipted, receiptedHeader } from './receipt-reply.js';
import { idParamsSchema, apiRoutes as schemas } from './route-schemas.js';

/**
 * The schedule routes: create, list, read (with history and next fire times), enable,
 * disable or edit, delete. The API serves them, and so does the approver, whose console
 * manages schedules from its own origin; one registration for both.
 */
export function registerScheduleRoutes(v1: FastifyInstance, rt: Runtime): void {
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;
  v1.post('/v1/schedules', { schema: schemas.createSchedule }, async (req, reply) => {
    const body = parseInput(createScheduleBodySchema, req.body, 'body');
    const schedule = await receipted(rt.receipts, req.principal, () => rt.schedules.create(req.principal, body));
    return reply.status(201).header('location', `/v1/schedules/${schedule.id}`).send(schedule);
  });
  v1.get('/v1/schedules', { schema: schemas.listSchedules }, async (req) => rt.schedules.list(req.principal));
  v1.get('/v1/schedules/:id', { schema: schemas.getSchedule }, async (req) => rt.schedules.get(req.principal, id(req.params)));
  v1.patch('/v1/schedules/:id', { schema: schemas.patchSchedule }, async (req) => {
    const body = parseInput(patchScheduleBodySchema, req.body, 'body');
    return receipted(rt.receipts, req.principal, () => rt.schedules.patch(req.principal, id(req.params), body));
  });
  v1.delete('/v1/schedules/:id', { schema: schemas.deleteSchedule }, async (req, reply) => {
    await receiptedHeader(rt.receipts, req.principal, reply, () => rt.schedules.remove(req.principal, id(req.params)));
    return reply.status(204).send();
  });
}
