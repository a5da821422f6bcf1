import {
  approvalLoadQuerySchema,
  approveBodySchema,
  batchDecideBodySchema,
  createLinksBodySchema,
  listApprovalsQuerySchema,
  previewBodySchema,
  rejectBodySchema,
} from '@rein/contract';
import type { Principal } from '@rein/core';
import {
  approvalContext,
  createApprovalLinks,
  createServiceApp,
  createVersionService,
  EventStreams,
  feedVisibleTo,
  idParamsSchema,
  LinkUses,
  lastEventId,
  linkSecret,
  oidcVerifierFrom,
  parseInput,
  type Runtime,
  receipted,
  registerRunRoutes,
  registerScheduleRoutes,
  requireCredentials,
  approverRoutes as schemas,
  streamCaps,
  tenantKeys,
} from '@rein/core/http';
import type { FastifyInstance } from 'fastify';
import { mountConsole } from './console.js';
import { mountLinkPages } from './link-pages.js';

/** The approver API (list, read, preview, approve, reject; who may decide is core's `mayDecide`) and the console with the run routes it reads. */
export function createApproverApp(rt: Runtime): FastifyInstance {
  const { approvals, runs } = rt;
  const id = (params: unknown) => parseInput(idParamsSchema, params, 'path').id;
  const streams = new EventStreams(rt.redis, rt.logger, streamCaps(rt.options.http));
  // A plain user sees the feed of their own runs only, as with GET /v1/runs/:id.
  const visibleTo = (principal: Principal) => feedVisibleTo(principal, (ids) => rt.store.getMany(ids));

  const versions = createVersionService({
    directory: rt.versions,
    store: rt.store,
    enqueue: rt.enqueue,
    queues: rt.scheduler,
    logger: rt.logger,
  });

  // Links decide as a user their keys name; with company sign-in only there are none, and no link can be minted.
  const keys = requireCredentials(rt.options.http, rt.options.oidc);
  const oidc = oidcVerifierFrom(rt.options.oidc);
  const links = createApprovalLinks({
    approvals,
    uses: new LinkUses(rt.redis),
    keys,
    secret: linkSecret(rt.options.approvals.linkSecret, keys),
    consoleUrl: rt.options.webhooks.consoleUrl,
  });

  const app = createServiceApp(
    rt,
    (v1) => {
      // The console reads runs from its own origin: the API's run routes, registered here too.
      registerRunRoutes(v1, rt, { streams, versions });
      registerScheduleRoutes(v1, rt);
      v1.get('/v1/console', { schema: schemas.consoleSettings }, async () => ({
        ...(rt.options.tracing.urlTemplate ? { traceUrlTemplate: rt.options.tracing.urlTemplate } : {}),
      }));
      v1.get('/v1/approvals', { schema: schemas.listApprovals }, async (req) =>
        approvals.list(req.principal, parseInput(listApprovalsQuerySchema, req.query, 'query')),
      );
      v1.get('/v1/approvals/events', { schema: schemas.approvalEvents }, async (req, reply) => {
        const tenantId = req.principal.tenantId;
        const visible = visibleTo(req.principal);
        await streams.serve(
          reply,
          req.principal,
          {
            key: tenantKeys(tenantId).approvalFeed,
            read: (cursor) => rt.feed.read(tenantId, cursor),
            keep: (entries) => visible(entries, (entry) => entry.event.runId),
          },
          lastEventId(req.headers, req.query),
        );
      });
      v1.get('/v1/approvals/load', { schema: schemas.approvalLoad }, async (req) =>
        approvals.load(req.principal, parseInput(approvalLoadQuerySchema, req.query, 'query')),
      );
      // Writes whose outcome is unknown after a crash: approvers reconcile them by hand.
      v1.get('/v1/effects/uncertain', { schema: schemas.uncertainEffects }, async (req) => ({
        effects: await rt.feed.uncertainEffects(req.principal.tenantId, 100, (effects) =>
          visibleTo(req.principal)(effects, (effect) => effect.runId),
        ),
      }));
      // Before /:id routes of the same shape: "decide" is no approval id.
      v1.post('/v1/approvals/decide', { schema: schemas.decideMany }, async (req) => {
        const body = parseInput(batchDecideBodySchema, req.body, 'body');
        return approvals.decideMany(req.principal, body.ids, body.verdict, body.comment);
      });
      v1.get('/v1/approvals/:id', { schema: schemas.getApproval }, async (req) => approvals.get(req.principal, id(req.params)));
      // The run as the approver sees it when deciding: the trace so far, same tenant only.
      v1.get('/v1/approvals/:id/trace', { schema: schemas.approvalTrace }, async (req) => {
        const approval = await approvals.get(req.principal, id(req.params));
        return runs.trace(req.principal, approval.runId);
      });
      // The call in its context: the trace's input, thought and observations (same visibility), the app's fields.
      v1.get('/v1/approvals/:id/context', { schema: schemas.approvalContext }, async (req) => {
        const approval = await approvals.get(req.principal, id(req.params));
        return approvalContext(approval, await runs.trace(req.principal, approval.runId), Date.now());
      });
      v1.post('/v1/approvals/:id/approve', { schema: schemas.approve }, async (req) => {
        const body = parseInput(approveBodySchema, req.body, 'body');
        return receipted(rt.receipts, req.principal, () => approvals.decide(req.principal, id(req.params), { kind: 'approve', ...body }));
      });
      // Judge an edit before deciding it: the console shows the risk and the rule it would get.
      v1.post('/v1/approvals/:id/preview', { schema: schemas.previewApproval }, async (req) => {
        const body = parseInput(previewBodySchema, req.body ?? {}, 'body');
        return approvals.preview(req.principal, id(req.params), body.arguments);
      });
      // Mint single-use links (for mail and chat), pointing at the configured public URL.
      v1.post('/v1/approvals/:id/links', { schema: schemas.createLinks }, async (req) => {
        const body = parseInput(createLinksBodySchema, req.body ?? {}, 'body');
        return links.mint(req.principal, id(req.params), body);
      });
      v1.post('/v1/approvals/:id/reject', { schema: schemas.reject }, async (req) => {
        const body = parseInput(rejectBodySchema, req.body, 'body');
        return receipted(rt.receipts, req.principal, () =>
          approvals.decide(req.principal, id(req.params), { kind: 'reject', reason: body.reason }),
        );
      });
    },
    { oidc },
  );
  app.addHook('preClose', async () => streams.close());
  const { consoleClientId, consoleScopes, consoleToken } = rt.options.oidc;
  mountConsole(
    app,
    oidc && consoleClientId ? { verifier: oidc, clientId: consoleClientId, scopes: consoleScopes, token: consoleToken } : undefined,
  );
  mountLinkPages(app, links);
  return app;
}
