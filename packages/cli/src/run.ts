import { ensureFleet, fleetClient } from './fleet-client.js';
import { createTraceRenderer, printSummary } from './trace-render.js';

export interface RunOptions {
  agent?: string;
  watch?: boolean;
  /** Approve every approval the run asks for, as the caller (the demo's shortcut). */
  approve?: boolean;
  /** Start a fleet (`rein dev`) when none answers. */
  startFleet?: boolean;
}

/** `rein run "<input>"`: submits a run; with `--watch` follows it live and prints the summary. */
export async function run(input: string, opts: RunOptions = {}): Promise<void> {
  const client = fleetClient();
  const stopFleet = opts.startFleet ? await ensureFleet(client) : () => {};
  try {
    const created = await client.rein.runs.create({ input, ...(opts.agent ? { agent: opts.agent } : {}) });
    process.stdout.write(`\n用户输入 / input: ${input}\nrun ${created.id}  trace ${created.traceId}\n\n`);
    if (!opts.watch && !opts.approve) return;
    await follow(created.id, opts.approve ?? false);
  } finally {
    stopFleet();
  }
}

/** Prints a run's events live until it finishes, approving parked calls when asked to. */
export async function follow(runId: string, approve = false): Promise<void> {
  const client = fleetClient();
  const render = createTraceRenderer();
  let pending: string[] = [];
  for await (const { event: e } of client.rein.runs.stream(runId)) {
    render(e);
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'approval.requested') pending.push(String(data.approvalId));
    if (approve && e.type === 'step.finished' && data.outcome === 'parked') {
      process.stdout.write('           the run is parked (pending_approval) and nothing has happened yet; approving as the caller…\n');
      for (const id of pending) await client.rein.approvals.approve(id, { comment: 'approved by rein run --approve' });
      pending = [];
    }
  }
  await printSummary(client.rein, runId);
}
