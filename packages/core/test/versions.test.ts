import type { Approval, RunRecord } from '@rein/contract';
import { defineAgent, defineApp, defineTool, type Tool } from '@rein/define/internal';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalEvent } from '../src/adapters/redis/approval-feed.js';
import { contentVersion, resolveAppVersion } from '../src/policy/app/app-version.js';
import type { FleetVersions } from '../src/policy/app/fleet-versions.js';
import { toolDigest } from '../src/policy/app/tool-digest.js';
import { moveRun } from '../src/policy/run/run-transitions.js';
import { routeVersion, versionVerdict, withdrawnOnMove } from '../src/policy/run/version-route.js';
import { linkParsedCallsToPlan, planDigest, planOptionsSchema, planOutcome } from '../src/policy/step/plan.js';
import { ConfigError } from '../src/shared/errors.js';

/** App versions as values (no Redis): the content version, routing by version, and what an upgrade keeps. */

const write = (params: z.ZodObject = z.object({ target: z.string() }), stricter = false) =>
  defineTool({
    name: 'apply',
    description: 'applies a change',
    kind: 'write',
    parameters: params,
    approval: stricter ? () => ({ risk: 'critical', summary: 'apply' }) : () => ({ risk: 'high', summary: 'apply' }),
    execute: () => 'done',
  });
const app = (instructions = 'Apply changes.', tools: Tool[] = [write()], version?: string) =>
  defineApp({ ...(version ? { version } : {}), agents: [defineAgent({ name: 'a', instructions, tools: ['apply'] })], tools });

describe('the content version', () => {
  it('is the same for two builds of one app, and changes with a prompt or a tool schema', () => {
    const v1 = contentVersion(app(), [write()]);
    expect(v1).toMatch(/^c-[0-9a-f]{12}$/);
    expect(contentVersion(app(), [write()])).toBe(v1);
    expect(contentVersion(app('Apply changes carefully.'), [write()])).not.toBe(v1);
    const wider = write(z.object({ target: z.string(), note: z.string().optional() }));
    expect(contentVersion(app('Apply changes.', [wider]), [wider])).not.toBe(v1);
  });

  it('gives way to the app’s own version, and REIN_APP_VERSION to both; a malformed one is a ConfigError', () => {
    expect(resolveAppVersion(app(undefined, undefined, 'v7'), [write()])).toBe('v7');
    expect(resolveAppVersion(app(undefined, undefined, 'v7'), [write()], 'sha-1a2b')).toBe('sha-1a2b');
    expect(() => resolveAppVersion(app(), [write()], '{rein}')).toThrow(ConfigError);
    expect(() => app(undefined, undefined, 'v 1')).toThrow(ConfigError);
  });
});

describe('routing by version', () => {
  const fleet: FleetVersions = { upgrades: { v1: 'v2', v2: 'v3', loop: 'loop2', loop2: 'loop' }, newestApi: 'v9' };
  it('keeps a pinned run on its version, follows upgrades (chains, not cycles), and sends an upgrade agent to the current one', () => {
    expect(routeVersion({ appVersion: 'v0' }, fleet, 'own')).toBe('v0');
    expect(routeVersion({ appVersion: 'v1' }, fleet, 'own')).toBe('v3');
    expect(['loop', 'loop2']).toContain(routeVersion({ appVersion: 'loop' }, fleet, 'own'));
    expect(routeVersion({}, fleet, 'own')).toBe('own'); // a run from before versions
    expect(routeVersion({ appVersion: 'v0', versioning: 'upgrade' }, fleet, 'own')).toBe('v9');
    expect(routeVersion({ appVersion: 'v0', versioning: 'upgrade' }, { ...fleet, promoted: 'v5' }, 'own')).toBe('v5');
  });

  it('tells a worker to run, reroute or move a run', () => {
    const run = (appVersion: string) => ({ appVersion }) as RunRecord;
    expect(versionVerdict(run('v3'), fleet, 'v3')).toEqual({ kind: 'own' });
    expect(versionVerdict(run('v0'), fleet, 'v3')).toEqual({ kind: 'reroute', to: 'v0' });
    expect(versionVerdict(run('v1'), fleet, 'v3')).toEqual({ kind: 'move' });
    expect(versionVerdict(run('v1'), fleet, 'v2')).toEqual({ kind: 'reroute', to: 'v3' });
  });
});

describe('an upgrade re-checks approvals against the new version’s tools', () => {
  const old = write();
  const approval = (status: Approval['status'], toolName = 'apply'): Approval => ({
    schemaVersion: 1,
    id: `r.1.${status}`,
    runId: 'r',
    step: 1,
    toolCallId: 'c',
    tenantId: 't',
    requestedBy: 'u',
    toolName,
    arguments: { target: 'x' },
    argsHash: '0'.repeat(64),
    policyVersion: 1,
    toolDigest: toolDigest(old),
    summary: 's',
    risk: 'high',
    requiredRole: 'approver',
    status,
    createdAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T01:00:00.000Z',
  });
  const all = [approval('pending'), approval('approved'), approval('rejected')];
  const at = '2026-01-01T00:30:00.000Z';

  it('keeps pending and approved ones whose tool is unchanged (same schema and policy, rebuilt)', () => {
    expect(withdrawnOnMove({ step: 1 }, all, new Map([['apply', write()]]), at)).toEqual([]);
  });

  it('withdraws them when the schema, the policy or the name changed; a decided refusal stays', () => {
    for (const tools of [
      new Map([['apply', write(z.object({ target: z.string(), note: z.string().optional() }))]]),
      new Map([['apply', write(undefined, true)]]),
      new Map<string, Tool>(),
    ]) {
      const withdrawn = withdrawnOnMove({ step: 1 }, all, tools, at);
      expect(withdrawn.map((a) => [a.id, a.status, a.reason])).toEqual([
        ['r.1.pending', 'withdrawn', 'version_changed'],
        ['r.1.approved', 'withdrawn', 'version_changed'],
      ]);
    }
  });

  it('leaves the approvals of calls already carried out (earlier steps) as they were', () => {
    expect(withdrawnOnMove({ step: 2 }, all, new Map<string, Tool>(), at)).toEqual([]);
  });

  it('announces such a withdrawal as approval.withdrawn (a cancel’s stays approval.decided)', () => {
    const [w] = withdrawnOnMove({ step: 1 }, [approval('approved')], new Map(), at);
    expect(approvalEvent(w as Approval, true)).toMatchObject({ type: 'approval.withdrawn', status: 'withdrawn' });
    expect(approvalEvent({ ...approval('withdrawn') }, true).type).toBe('approval.decided');
  });
});

describe('an upgrade re-checks plan approvals like single ones', () => {
  const lookup = defineTool({
    name: 'lookup',
    description: 'reads the target',
    kind: 'read',
    parameters: z.object({ target: z.string() }),
    execute: () => 'read',
  });
  const tools = (apply: Tool = write()) => new Map<string, Tool>([lookup, apply].map((t) => [t.name, t]));
  const run = (over: Partial<RunRecord> = {}) =>
    ({
      id: '00000000-0000-0000-0000-000000000002',
      tenantId: 't',
      userId: 'u',
      roles: ['user'],
      step: 0,
      pendingApprovals: [],
      ...over,
    }) as RunRecord;
  const content = JSON.stringify({
    steps: [
      { step: 1, action: 'lookup', args: { target: 'x' }, desc: 'look', risk: 'low' },
      { step: 2, action: 'apply', args: { target: 'x' }, desc: 'apply', risk: 'high' },
    ],
  });
  const parked = planOutcome({
    run: run(),
    content,
    tools: tools(),
    options: planOptionsSchema.parse({}),
    approvals: [],
    now: 0,
    approvalTtlMs: 1000,
  });
  if (parked.kind !== 'park') throw new Error(parked.kind);
  const pending = parked.approval;
  const approved: Approval = { ...pending, status: 'approved', decidedBy: 'lisi' };
  const at = '2026-01-01T00:30:00.000Z';
  const changed = [
    tools(write(z.object({ target: z.string(), note: z.string().optional() }))),
    tools(write(undefined, true)),
    new Map<string, Tool>([['lookup', lookup]]),
  ];

  it('records the digest of every step’s tool on the plan’s approval', () => {
    expect(pending.toolDigest).toBe(planDigest(parked.plan.steps, tools()));
    expect(planDigest(parked.plan.steps, changed[0] as Map<string, Tool>)).not.toBe(pending.toolDigest);
  });

  it('keeps a pending or approved plan whose tools are unchanged, withdraws it when a step’s tool changed', () => {
    expect(withdrawnOnMove({ step: 0 }, [pending], tools(), at)).toEqual([]);
    for (const next of changed) {
      expect(withdrawnOnMove({ step: 0 }, [pending], next, at).map((a) => [a.status, a.reason])).toEqual([
        ['withdrawn', 'version_changed'],
      ]);
    }
    // An approved plan carried out over later steps is judged too: its approval is of an earlier step.
    const following = run({ step: 3, plan: { ...parked.plan, status: 'approved', done: [1] } });
    expect(withdrawnOnMove(following, [approved], tools(), at)).toEqual([]);
    expect(withdrawnOnMove(following, [approved], changed[0] as Map<string, Tool>, at)).toHaveLength(1);
  });

  it('no step of a withdrawn plan runs on it: its approved, not yet carried out calls ask for approvals of their own', () => {
    const following = run({
      step: 3,
      plan: { ...parked.plan, status: 'approved', done: [1], granted: { risk: 'high', requiredRole: 'approver' } },
    });
    const withdrawn = withdrawnOnMove(following, [approved], changed[0] as Map<string, Tool>, at);
    const moved = moveRun(following, 'v2', withdrawn, at).to;
    expect(moved.plan?.status).toBe('rejected');
    expect(linkParsedCallsToPlan(following.plan, [{ name: 'apply', args: { target: 'x' } }])).toEqual([2]);
    expect(linkParsedCallsToPlan(moved.plan, [{ name: 'apply', args: { target: 'x' } }])).toEqual([undefined]);
    // Unchanged tools: the plan goes on as approved.
    expect(moveRun(following, 'v2', [], at).to.plan?.status).toBe('approved');
  });

  it('tells the model a plan still waiting for its decision was withdrawn because the version changed', () => {
    const [w] = withdrawnOnMove({ step: 0 }, [pending], changed[0] as Map<string, Tool>, at);
    const outcome = planOutcome({
      run: run({ plan: parked.plan }),
      content,
      tools: changed[0] as Map<string, Tool>,
      options: planOptionsSchema.parse({}),
      approvals: [w as Approval],
      now: 0,
      approvalTtlMs: 1000,
    });
    expect(outcome).toMatchObject({ kind: 'proceed', plan: { status: 'rejected' } });
    expect(outcome.kind === 'proceed' && outcome.note).toContain('new version');
  });
});
