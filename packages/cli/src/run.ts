import { ensureFleet, fleetClient } from './fleet-client.js';
import { createTraceRenderer, printSummary, runEvents } from './trace-render.js';

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
    const created = await client.call<{ id: string; traceId: string; status: string }>('POST', `${client.api}/v1/runs`, {
      input,
      ...(opts.agent ? { agent: opts.agent } : {}),
    });
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
  for await (const e of runEvents(client, runId)) {
    render(e);
    const data = (e.data ?? {}) as Record<string, unknown>;
    if (e.type === 'approval.requested') pending.push(String(data.approvalId));
    if (approve && e.type === 'step.finished' && data.outcome === 'parked') {
      process.stdout.write('           the run is parked (pending_approval) and nothing has happened yet; approving as the caller…\n');
      for (const id of pending)
        await client.call('POST', `${client.approver}/v1/approvals/${id}/approve`, { comment: 'approved by rein run --approve' });
      pending = [];
    }
  }
  await printSummary(client, runId);
}
