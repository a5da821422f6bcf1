import type { ReinClient } from '@rein/client';
import type { UsageResponse } from '@rein/contract';
import { useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { ms, tokens, usd } from './format.js';
import { ErrorNote, Risk, Section, useLoad, useSession } from './ui.js';

interface Row {
  key: string;
  runs: number;
  tokens: number;
  costUsd: number;
}
interface Usage {
  source: 'archive' | 'redis';
  byDay: Row[];
  byAgent: Row[];
}

const DAY = 86_400_000;
const fromRows = (r: UsageResponse): Row[] =>
  r.rows.map((x) => ({ key: x.key, runs: x.runs, tokens: x.promptTokens + x.completionTokens, costUsd: x.costUsd }));

/** Without an archive: the runs Redis still holds, summed here (a bounded number of pages). */
async function fromHotRuns(client: ReinClient, since: string): Promise<Usage> {
  const byDay = new Map<string, Row>();
  const byAgent = new Map<string, Row>();
  let cursor: string | undefined;
  for (let page = 0; page < 5; page++) {
    const list = await client.runs.list({ createdAfter: since, limit: 200, cursor });
    for (const r of list.runs) {
      for (const [map, key] of [
        [byDay, r.createdAt.slice(0, 10)],
        [byAgent, r.agent],
      ] as const) {
        const row = map.get(key) ?? { key, runs: 0, tokens: 0, costUsd: 0 };
        row.runs += 1;
        row.tokens += r.usage.totalTokens;
        row.costUsd += r.costUsd;
        map.set(key, row);
      }
    }
    cursor = list.nextCursor;
    if (!cursor) break;
  }
  return { source: 'redis', byDay: [...byDay.values()].sort((a, b) => a.key.localeCompare(b.key)), byAgent: [...byAgent.values()] };
}

/** Tokens, cost and runs per day and per agent, from the usage API (archive) or else from the runs in Redis. */
export function UsagePage() {
  const { api } = useSession();
  const [days, setDays] = useState(14);
  const usage = useLoad(async (): Promise<Usage> => {
    const to = new Date(Date.now() + DAY).toISOString().slice(0, 10);
    const from = new Date(Date.now() - days * DAY).toISOString().slice(0, 10);
    const range = { from: `${from}T00:00:00Z`, to: `${to}T00:00:00Z` };
    try {
      const [byDay, byAgent] = await Promise.all([
        api.client.usage({ ...range, groupBy: 'day' }),
        api.client.usage({ ...range, groupBy: 'agent' }),
      ]);
      return { source: 'archive', byDay: fromRows(byDay), byAgent: fromRows(byAgent) };
    } catch (err) {
      if (err instanceof ApiError && err.code === 'archive_unavailable') return fromHotRuns(api.client, range.from);
      throw err;
    }
  }, [api, days]);
  const data = usage.data;
  return (
    <>
      <h1>Usage</h1>
      <form class="filters card" onSubmit={(e) => e.preventDefault()}>
        <label>
          Window
          <select value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            <option value="7">7 days</option>
            <option value="14">14 days</option>
            <option value="30">30 days</option>
          </select>
        </label>
      </form>
      <ErrorNote error={usage.error} />
      {data ? (
        <>
          <p class="muted" id="usage-source">
            {data.source === 'archive'
              ? 'From the run archive (GET /v1/usage).'
              : 'No run archive: summed from the runs Redis still holds (the newest 1,000 at most).'}
          </p>
          <Section title="Per day" id="per-day">
            <div class="charts">
              <BarChart title="Tokens per day" rows={data.byDay} value={(r) => r.tokens} format={tokens} />
              <BarChart title="Cost per day" rows={data.byDay} value={(r) => r.costUsd} format={usd} />
              <BarChart title="Runs per day" rows={data.byDay} value={(r) => r.runs} format={String} />
            </div>
          </Section>
          <Section title="Per agent" id="per-agent">
            <div class="charts">
              <BarChart title="Tokens per agent" rows={data.byAgent} value={(r) => r.tokens} format={tokens} />
              <BarChart title="Cost per agent" rows={data.byAgent} value={(r) => r.costUsd} format={usd} />
            </div>
            <UsageTable rows={data.byAgent} label="Agent" />
          </Section>
        </>
      ) : null}
      <ApprovalLoadSection />
    </>
  );
}

const pct = (n: number | null) => (n === null ? '—' : `${Math.round(n * 1000) / 10}%`);

/** The approval load (GET /v1/approvals/load): what a team reads before it trusts an auto-approve policy. */
function ApprovalLoadSection() {
  const { api } = useSession();
  const [hours, setHours] = useState(24);
  const load = useLoad(() => api.client.approvals.load({ hours }), [api, hours]);
  const l = load.data;
  return (
    <Section title="Approval load" id="approval-load">
      <form class="filters" aria-label="Approval load window" onSubmit={(e) => e.preventDefault()}>
        <label>
          Approvals asked for in the last
          <select value={String(hours)} onChange={(e) => setHours(Number(e.currentTarget.value))}>
            <option value="1">hour</option>
            <option value="24">24 hours</option>
            <option value="168">7 days</option>
          </select>
        </label>
      </form>
      <ErrorNote error={load.error} />
      {l ? (
        <>
          <p id="approval-load-summary">
            {l.asked} asked · {l.decided} decided · {l.expired} expired · {l.pending} pending · <strong>{pct(l.withinSla)}</strong> decided
            within the SLA ({ms(l.slaMs)}){l.truncated ? ' · the newest 5,000 counted' : ''}
          </p>
          <div class="table-wrap">
            <table aria-label="Time to decision by tool and risk">
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Risk</th>
                  <th scope="col">Decided</th>
                  <th scope="col">p50</th>
                  <th scope="col">p95</th>
                </tr>
              </thead>
              <tbody id="time-to-decision">
                {l.timeToDecision.map((r) => (
                  <tr key={`${r.tool}:${r.risk}`}>
                    <td>{r.tool}</td>
                    <td>
                      <Risk risk={r.risk} />
                    </td>
                    <td class="num">{r.decided}</td>
                    <td class="num">{ms(r.p50Ms)}</td>
                    <td class="num">{ms(r.p95Ms)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="table-wrap">
            <table aria-label="Decisions per approver">
              <thead>
                <tr>
                  <th scope="col">Approver</th>
                  <th scope="col">Decided</th>
                  <th scope="col">Per hour</th>
                </tr>
              </thead>
              <tbody id="deciders">
                {l.deciders.map((d) => (
                  <tr key={d.userId}>
                    <td>{d.userId}</td>
                    <td class="num">{d.decided}</td>
                    <td class="num">{d.perHour.toFixed(2)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
    </Section>
  );
}

function UsageTable({ rows, label }: { rows: Row[]; label: string }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">{label}</th>
          <th scope="col">Runs</th>
          <th scope="col">Tokens</th>
          <th scope="col">Cost</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key}>
            <td>{r.key}</td>
            <td class="num">{r.runs}</td>
            <td class="num">{tokens(r.tokens)}</td>
            <td class="num">{usd(r.costUsd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Horizontal bars in SVG (attributes, no inline style), each labelled with its value. */
function BarChart({
  title,
  rows,
  value,
  format,
}: {
  title: string;
  rows: Row[];
  value: (r: Row) => number;
  format: (n: number) => string;
}) {
  const max = Math.max(1e-9, ...rows.map(value));
  const bar = 22;
  const height = Math.max(1, rows.length) * bar + 8;
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {rows.length === 0 ? (
        <p class="muted">No runs in the window.</p>
      ) : (
        <svg
          viewBox={`0 0 400 ${height}`}
          role="img"
          aria-label={`${title}: ${rows.map((r) => `${r.key} ${format(value(r))}`).join(', ')}`}
        >
          {rows.map((r, i) => (
            <g key={r.key} transform={`translate(0 ${i * bar + 4})`}>
              <text x="0" y="14" class="chart-label">
                {r.key}
              </text>
              <rect x="130" y="2" height="16" width={Math.max(1, (value(r) / max) * 190)} class="chart-bar" />
              <text x={136 + (value(r) / max) * 190} y="14" class="chart-value">
                {format(value(r))}
              </text>
            </g>
          ))}
        </svg>
      )}
    </figure>
  );
}
