import { ensureFleet, fleetClient } from './fleet-client.js';
import { createTraceRenderer, ENGLISH_LABELS, printSummary, type TraceLabels } from './trace-render.js';

export interface RunOptions {
  agent?: string;
  watch?: boolean;
  /** Approve every approval the run asks for, as the caller (the demo's shortcut). */
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

/** Prints a run's events live until it finishes, approving parked calls when asked to. */
export async function follow(runId: string, approve = false, labels: TraceLabels = ENGLISH_LABELS): Promise<void> {
  const client = fleetClient();
  const render = createTraceRenderer(undefined, labels);
  let pending: string[] = [];
  for await (const { event: e } of client.rein.runs.stream(runId)) {
    render(e);
    if (e.type === 'approval.requested') pending.push(e.data.approvalId);
    if (e.type === 'step.finished' && e.data.outcome === 'parked') {
      if (approve) {
        process.stdout.write('           the run is parked (pending_approval) and nothing has happened yet; approving as the caller…\n');
        for (const id of pending) await client.rein.approvals.approve(id, { comment: 'approved by rein run --approve' });
      } else {
        process.stdout.write(`${whereToApprove(client.approver, pending).join('\n')}\n`);
      }
      pending = [];
    }
  }
  await printSummary(client.rein, runId, undefined, labels);
}
