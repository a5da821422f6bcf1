import {
  auditQuerySchema,
  createReplayCohortBodySchema,
  createWebhookBodySchema,
  promoteBodySchema,
  upgradeBodySchema,
  versionImpactQuerySchema,
} from '@rein/contract';
import {
  createA2aService,
  createDecisionLog,
  createLangGraphService,
  createMcpDoor,
  createServiceApp,
  createVersionImpact,
  createVersionService,
  createWebhookService,
  EventStreams,
  idParamsSchema,
  parseInput,
  type Runtime,
  receipted,
  receiptedHeader,
  registerA2aCard,
  registerA2aRoutes,
  registerApiRunRoutes,
  registerDoorRoutes,
  registerMcpRoutes,
  registerQueueDepth,
  registerRunRoutes,
  registerScheduleRoutes,
  registerVersionGauges,
  ScheduleStore,
  apiRoutes as schemas,
  streamCaps,
  ThreadStore,
  versionParamsSchema,
} from '@rein/core/http';
import type { FastifyInstance } from 'fastify';
import { registerLangGraphRoutes } from './langgraph-routes.js';
import { mountQueueBoard } from './queue-board.js';

/** The runs API: submit, read, trace, stream, list, cancel (the reads shared with the approver). Logic lives in @rein/core. */
export function createApiApp(rt: Runtime): FastifyInstance {
  const runs = rt.runs;
  registerQueueDepth(
    rt.metrics,
    rt.scheduler.queues.map((queue) => () => queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'failed')),
  );
  registerVersionGauges(rt.metrics, {
    list: async () => Promise.all((await rt.versions.list()).map(async (f) => ({ ...f, jobs: await rt.scheduler.jobCounts(f.version) }))),
  });
  const versions = createVersionService({
    directory: rt.versions,
    store: rt.store,
    enqueue: rt.enqueue,
    queues: rt.scheduler,
    logger: rt.logger,
    audit: rt.audit,
  });
  // What only the API serves: webhook subscriptions and the decision log's pages.
  const webhooks = createWebhookService({ store: rt.webhookStore, allowPrivate: rt.options.webhooks.allowPrivate, audit: rt.audit });
  const decisionLog = createDecisionLog(rt.audit);
  const impact = createVersionImpact({ directory: rt.versions, store: rt.store, schedules: new ScheduleStore(rt.redis) });
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;
  const version = (params: unknown) => parseInput(versionParamsSchema, params, 'path').version;
  const streams = new EventStreams(rt.redis, rt.logger, streamCaps(rt.options.http));
  const a2a = createA2aService({
    runs,
    approvals: rt.approvals,
    agents: rt.app.agents,
    version: rt.version,
    push: { configs: rt.pushConfigs, notify: rt.a2aPush, allowPrivate: rt.options.webhooks.allowPrivate },
  });
  const mcp = createMcpDoor({
    runs,
    agents: rt.app.agents,
    version: rt.version,
    logger: rt.logger,
    consoleUrl: rt.options.webhooks.consoleUrl,
  });

  const lgs = createLangGraphService({
    runs,
    approvals: rt.approvals,
    agents: rt.agents,
    tools: rt.tools,
    threads: new ThreadStore(rt.redis),
    schedules: rt.schedules,
    masker: rt.masker,
    follow: (source, from, signal) => streams.follow(source, from, signal),
    appVersion: rt.version,
  });
  const doors = [{ prefix: '/lg', routes: (scope: FastifyInstance) => registerLangGraphRoutes(scope, lgs, streams, rt.itemStore) }];

  const app = createServiceApp(
    rt,
    (v1) => {
      registerApiRunRoutes(v1, rt);
      registerRunRoutes(v1, rt, { streams, versions });
      registerDoorRoutes(v1, rt, streams);

      v1.get('/v1/sessions/:id', { schema: schemas.getSession }, async (req) => runs.session(req.principal, id(req.params)));

      registerScheduleRoutes(v1, rt);

      v1.post('/v1/webhooks', { schema: schemas.createWebhook }, async (req, reply) => {
        const body = parseInput(createWebhookBodySchema, req.body, 'body');
        const hook = await receipted(rt.receipts, req.principal, () => webhooks.create(req.principal, body));
        return reply.status(201).send(hook);
      });
      v1.get('/v1/webhooks', { schema: schemas.listWebhooks }, async (req) => ({ webhooks: await webhooks.list(req.principal) }));
      v1.delete('/v1/webhooks/:id', { schema: schemas.deleteWebhook }, async (req, reply) => {
        await receiptedHeader(rt.receipts, req.principal, reply, () => webhooks.remove(req.principal, id(req.params)));
        return reply.status(204).send();
      });
      v1.get('/v1/webhooks/:id/deliveries', { schema: schemas.webhookDeliveries }, async (req) =>
        webhooks.deliveries(req.principal, id(req.params)),
      );

      v1.post('/v1/versions/:version/promote', { schema: schemas.promoteVersion }, async (req) => {
        const body = parseInput(promoteBodySchema, req.body ?? {}, 'body');
        return receipted(rt.receipts, req.principal, () => versions.promote(req.principal, version(req.params), body));
      });
      v1.get('/v1/versions/:version/impact', { schema: schemas.versionImpact }, async (req) =>
        impact(req.principal, version(req.params), parseInput(versionImpactQuerySchema, req.query, 'query').against),
      );
      v1.post('/v1/versions/:version/upgrade', { schema: schemas.upgradeVersion }, async (req, reply) => {
        const body = parseInput(upgradeBodySchema, req.body ?? {}, 'body');
        return reply
          .code(202)
          .send(await receipted(rt.receipts, req.principal, () => versions.upgrade(req.principal, version(req.params), body)));
      });

      // The fleet's audit public keys: what verifies a receipt or a signed checkpoint offline.
      v1.get('/v1/audit/keys', { schema: schemas.getAuditKeys }, async () => rt.audit.signer?.keys() ?? { keys: [] });
      v1.get('/v1/audit', { schema: schemas.getAudit }, async (req) =>
        decisionLog.page(req.principal, parseInput(auditQuerySchema, req.query, 'query')),
      );

      v1.post('/v1/replays', { schema: schemas.createReplayCohort }, async (req, reply) => {
        const cohort = await rt.cohorts.create(req.principal, parseInput(createReplayCohortBodySchema, req.body, 'body'));
        return reply.code(202).header('location', `/v1/replays/${cohort.id}`).send(cohort);
      });
      v1.get('/v1/replays/:id', { schema: schemas.getReplayCohort }, async (req) => rt.cohorts.get(req.principal, id(req.params)));

      // Protocol doors (docs/interop.md): the same caller, the same services.
      registerA2aRoutes(v1, { a2a, runs, streams, logger: rt.logger });
      registerMcpRoutes(v1, { door: mcp, runs, streams, origins: rt.options.http.corsOrigins, logger: rt.logger });
    },
    { doors, cors: true },
  );
  registerA2aCard(app, a2a);

  app.addHook('preClose', async () => streams.close());
  app.register((scope) => mountQueueBoard(scope, rt));
  return app;
}
