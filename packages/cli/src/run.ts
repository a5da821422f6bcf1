import { ReinApiError, ReinClient } from '@rein/client';
import type { ApiKey } from '@rein/contract';
import { DEMO_KEYS } from './demo-keys.js';
import { ensureFleet, type FleetClient, fleetClient } from './fleet-client.js';
import { createTraceRenderer, ENGLISH_LABELS, printSummary, type TraceLabels } from './trace-render.js';

export interface RunOptions {
  agent?: string;
  watch?: boolean;
  /** Approve every approval the run asks for, as an approver (the demo's shortcut): see `deciders`. */
  approve?: boolean;
  /** Start a fleet (`rein dev`) when none answers. */
  startFleet?: boolean;
  /** The trace's words (plain English by default). */
  labels?: TraceLabels;
}

/** `rein run "<input>"`: submits a run; with `--watch` follows it live and prints the summary. */
export async function run(input: string, opts: RunOptions = {}): Promise<void> {
  const client = fleetClient();
  const labels = opts.labels ?? ENGLISH_LABELS;
  const stopFleet = opts.startFleet ? await ensureFleet(client) : () => {};
  try {
    const created = await client.rein.runs.create({ input, ...(opts.agent ? { agent: opts.agent } : {}) });
    process.stdout.write(`\n${labels.input}: ${input}\nrun ${created.id}  trace ${created.traceId}\n\n`);
    if (!opts.watch && !opts.approve) return;
    await follow(created.id, opts.approve ?? false, labels);
  } finally {
    stopFleet();
  }
}

/** What to do about a parked run: where a person approves it (the console, or the approver's route). */
export function whereToApprove(approverUrl: string, approvalIds: string[]): string[] {
  return [
    `           the run is parked (pending_approval) and nothing has happened yet; a person with an approver key decides:`,
    `           console  ${approverUrl}/console`,
    ...approvalIds.map(
      (id) => `           or       curl -X POST ${approverUrl}/v1/approvals/${id}/approve -H 'Authorization: Bearer <approver key>'`,
    ),
  ];
}

/** A key that may decide approvals, and whose it is. */
interface Decider {
  key: string;
  who: string;
}

/**
 * Who decides for `--approve`: REIN_APPROVER_KEY, else the keys of REIN_API_KEYS (or the demo
 * keys) holding a deciding role, the least powerful first — a person with the right role,
 * never the requester deciding their own request.
 */
export function deciders(env: NodeJS.ProcessEnv): Decider[] {
  if (env.REIN_APPROVER_KEY) return [{ key: env.REIN_APPROVER_KEY, who: 'the REIN_APPROVER_KEY holder' }];
  const keys = env.REIN_API_KEYS ? (JSON.parse(env.REIN_API_KEYS) as ApiKey[]) : DEMO_KEYS;
  return (['approver', 'supervisor', 'admin'] as const).flatMap((role) =>
    keys.filter((k) => k.roles.includes(role)).map((k) => ({ key: k.key, who: `${k.userId} (${role})` })),
  );
}

/** Decides one approval as the first decider allowed to; null when none is (it then waits for a person). */
async function approveAsDecider(client: FleetClient, id: string, who: Decider[]): Promise<Decider | null> {
  for (const d of who) {
    const as = new ReinClient({ apiUrl: client.api, approverUrl: client.approver, apiKey: d.key });
    try {
      await as.approvals.approve(id, { comment: 'approved by rein run --approve' });
      return d;
    } catch (err) {
      // Not a key this fleet knows, or not this decider's to decide (role, four eyes): the next one may.
      if (err instanceof ReinApiError && (err.status === 401 || err.status === 403)) continue;
      throw err;
    }
  }
  return null;
}

/** Prints a run's events live until it finishes, approving parked calls (as an approver) when asked to. */
export async function follow(runId: string, approve = false, labels: TraceLabels = ENGLISH_LABELS): Promise<void> {
  const client = fleetClient();
  const render = createTraceRenderer(undefined, labels, runId);
  let pending: string[] = [];
  for await (const { event: e } of client.rein.runs.stream(runId)) {
    render(e);
    if (e.type === 'approval.requested') pending.push(e.data.approvalId);
    if (e.type === 'step.finished' && e.data.outcome === 'parked') {
      if (approve) {
        for (const id of pending) {
          const by = await approveAsDecider(client, id, deciders(process.env));
          process.stdout.write(
            by
              ? `           the run is parked (pending_approval) and nothing has happened yet; ${by.who} approves ${id}…\n`
              : `${whereToApprove(client.approver, [id]).join('\n')}\n`,
          );
        }
      } else {
        process.stdout.write(`${whereToApprove(client.approver, pending).join('\n')}\n`);
      }
      pending = [];
    }
  }
  await printSummary(client.rein, runId, undefined, labels);
}
