import type { ApprovalView, RunDiff, RunTrace, RunView } from '@rein/contract';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, follow } from './api.js';
import { ms, TERMINAL, tokens, usd, when } from './format.js';
import { replayDiffable, replayHeadline } from './replay-state.js';
import { atLeast, Diff, ErrorNote, Json, type Me, Risk, Section, Status, useSession } from './ui.js';

type Step = RunTrace['steps'][number];
type Call = Step['toolCalls'][number];

/** One run: its header, actions, plan, compensation, children and the timeline of its steps, live until it ends. */
export function RunPage({ id }: { id: string }) {
  const { api, me, traceUrlTemplate } = useSession();
  const [run, setRun] = useState<RunView>();
  const [trace, setTrace] = useState<RunTrace>();
  const [error, setError] = useState<Error>();
  const [live, setLive] = useState(false);
  const pending = useRef<ReturnType<typeof setTimeout>>(undefined);

  const load = useCallback(async () => {
    try {
      const [r, t] = await Promise.all([api.client.runs.get(id), api.client.runs.trace(id)]);
      setRun(r);
      setTrace(t);
      setError(undefined);
    } catch (err) {
      setError(err as Error);
    }
  }, [api, id]);

  useEffect(() => {
    void load();
    const stop = new AbortController();
    setLive(true);
    // Each event of the run: read it again (a burst of events, one read).
    follow(api.client.runs.stream(id, { signal: stop.signal }), () => {
      clearTimeout(pending.current);
      pending.current = setTimeout(() => void load(), 150);
    })
      .catch(() => undefined)
      .finally(() => {
        setLive(false);
        void load();
      });
    return () => stop.abort();
  }, [api, id, load]);

  if (error && !run)
    return (
      <>
        <h1>Run {id}</h1>
        <ErrorNote error={error instanceof ApiError && error.status === 404 ? new Error('No such run (or not yours to see).') : error} />
        <a href="#/runs">Back to runs</a>
      </>
    );
  if (!run || !trace) return <p class="muted">Loading run…</p>;
  const finished = TERMINAL.includes(run.status);
  const traceUrl = traceUrlTemplate?.replace('{traceId}', encodeURIComponent(run.traceId));

  return (
    <>
      <p>
        <a href="#/runs">← Runs</a>
      </p>
      <h1>
        Run <code>{run.id}</code> <Status status={run.status} />
        {live && !finished ? <span class="live"> · live</span> : null}
      </h1>
      {run.waitingForVersion ? (
        <p class="refusal" id="waiting-for-version" role="status">
          Waiting for app version <code>{run.waitingForVersion.version}</code>: no worker of it is alive (since{' '}
          {when(run.waitingForVersion.since)}). Start a worker of that version, or have an operator move its runs with{' '}
          <code>rein versions upgrade</code>.
        </p>
      ) : null}
      <dl class="facts card">
        <dt>Agent</dt>
        <dd>{run.agent}</dd>
        <dt>Version</dt>
        <dd>{run.appVersion ?? '—'}</dd>
        <dt>Created</dt>
        <dd>{when(run.createdAt)}</dd>
        <dt>Elapsed</dt>
        <dd>{ms(trace.elapsedMs)}</dd>
        <dt>Tokens</dt>
        <dd>
          {tokens(run.usage.totalTokens)} ({tokens(run.usage.promptTokens)} in, {tokens(run.usage.completionTokens)} out)
        </dd>
        <dt>Cost</dt>
        <dd>
          {usd(run.costUsd)}
          {run.treeUsage ? ` (with sub-agents ${usd(run.treeUsage.costUsd)}, ${tokens(run.treeUsage.totalTokens)} tokens)` : ''}
        </dd>
        {run.reason ? (
          <>
            <dt>Reason</dt>
            <dd>{run.reason}</dd>
          </>
        ) : null}
        {run.parentRunId ? (
          <>
            <dt>Parent run</dt>
            <dd>
              <a href={`#/runs/${encodeURIComponent(run.parentRunId)}`}>{run.parentRunId}</a>
            </dd>
          </>
        ) : null}
        {run.replayOf ? (
          <>
            <dt>Replay of</dt>
            <dd>
              <a href={`#/runs/${encodeURIComponent(run.replayOf)}`}>{run.replayOf}</a>
            </dd>
          </>
        ) : null}
        <dt>Trace</dt>
        <dd>
          {traceUrl ? (
            <a href={traceUrl} target="_blank" rel="noopener noreferrer">
              {run.traceId}
            </a>
          ) : (
            <code>{run.traceId}</code>
          )}
        </dd>
      </dl>
      <Section title="Input">
        <p class="prose">{run.input}</p>
        {run.finalAnswer ? (
          <>
            <h3>Final answer</h3>
            <p class="prose" id="final-answer">
              {run.finalAnswer}
            </p>
          </>
        ) : null}
      </Section>
      <Actions run={run} me={me} onChange={load} />
      {run.pendingApprovals.length ? (
        <Section title="Waiting for approval">
          <ul>
            {run.pendingApprovals.map((a) => (
              <li key={a.id}>
                <a href={`#/approvals/${encodeURIComponent(a.id)}`}>{a.summary}</a> <Risk risk={a.risk} /> needs {a.deciders.role}
              </li>
            ))}
          </ul>
        </Section>
      ) : null}
      {trace.plan ? <Plan plan={trace.plan} /> : null}
      {run.compensation ? <Compensation c={run.compensation} /> : null}
      {run.children?.length ? (
        <Section title="Sub-agent runs">
          <ChildTree items={run.children} depth={0} />
        </Section>
      ) : null}
      <Section title={`Timeline (${trace.steps.length} step${trace.steps.length === 1 ? '' : 's'})`} id="timeline">
        {trace.steps.length === 0 ? <p class="muted">No step committed yet.</p> : null}
        <ol class="timeline" id="steps">
          {trace.steps.map((s) => (
            <StepItem key={s.index} step={s} />
          ))}
        </ol>
      </Section>
      <ErrorNote error={error} />
    </>
  );
}

function StepItem({ step }: { step: Step }) {
  return (
    <li class="step" data-step={step.index}>
      <h3>
        Step {step.index} · {step.agent ?? '—'} · <code>{step.model}</code>
      </h3>
      <p class="muted">
        {ms(step.durationMs)} · {tokens(step.usage.promptTokens)} in / {tokens(step.usage.completionTokens)} out · {usd(step.costUsd)}
        {step.appVersion ? ` · version ${step.appVersion}` : ''}
      </p>
      {step.thought ? <p class="thought prose">{step.thought}</p> : null}
      {step.toolCalls.map((c) => (
        <ToolCall key={c.id} call={c} />
      ))}
    </li>
  );
}

function ToolCall({ call }: { call: Call }) {
  return (
    <div class="call" data-tool={call.name}>
      <p>
        <strong>{call.name}</strong> <span class={`badge outcome-${call.outcome}`}>{call.outcome}</span>{' '}
        <span class="muted">{ms(call.durationMs)}</span>
        {call.planStep ? <span class="muted"> · plan step {call.planStep}</span> : null}
        {call.fromSnapshot ? <span class="muted"> · answered from an earlier identical call</span> : null}
        {call.childRunId ? (
          <>
            {' · '}
            <a href={`#/runs/${encodeURIComponent(call.childRunId)}`}>child run</a>
          </>
        ) : null}
      </p>
      <div class="two">
        <div>
          <h4>Arguments</h4>
          <Json value={call.arguments} />
        </div>
        <div>
          <h4>Result</h4>
          <pre class="json">{call.observation}</pre>
        </div>
      </div>
      {call.approval ? <ApprovalOutcome a={call.approval} /> : null}
    </div>
  );
}

/** Who decided what and when, a quorum's votes, and an edit as a diff. */
export function ApprovalOutcome({ a }: { a: ApprovalView }) {
  return (
    <div class="approval-outcome">
      <p>
        Approval <Status status={a.status} /> <Risk risk={a.risk} />
        {a.decidedBy ? ` by ${a.decidedBy}` : ''}
        {a.decidedAt ? ` at ${when(a.decidedAt)}` : ''}
        {a.comment ? ` — “${a.comment}”` : ''}
      </p>
      {a.approvals?.length ? (
        <ul class="votes">
          {a.approvals.map((v) => (
            <li key={v.by + v.at}>
              {v.by} approved at {when(v.at)}
              {v.comment ? ` — “${v.comment}”` : ''}
            </li>
          ))}
        </ul>
      ) : null}
      {a.approvedArguments !== undefined ? (
        <>
          <h4>Edited by {a.editedBy ?? 'an approver'}</h4>
          <Diff before={a.arguments} after={a.approvedArguments} labels={['Proposed', 'Approved']} title="The approver's edit" />
        </>
      ) : null}
    </div>
  );
}

function Plan({ plan }: { plan: NonNullable<RunTrace['plan']> }) {
  return (
    <Section title={`Plan (${plan.status.replace('_', ' ')})`} id="plan">
      <ol class="plan">
        {plan.steps.map((s) => (
          <li key={s.step}>
            <span class={`badge ${plan.done.includes(s.step) ? 'status-succeeded' : 'status-queued'}`}>
              {plan.done.includes(s.step) ? 'done' : 'to do'}
            </span>{' '}
            <strong>{s.action}</strong> — {s.desc} <span class="muted">({s.risk})</span>
          </li>
        ))}
      </ol>
      {plan.decidedBy ? <p class="muted">Decided by {plan.decidedBy}</p> : null}
    </Section>
  );
}

function Compensation({ c }: { c: NonNullable<RunView['compensation']> }) {
  return (
    <Section title={`Compensation (round ${c.round}, ${c.status})`} id="compensation">
      <p class="muted">
        Started by {c.trigger === 'request' ? c.requestedBy : `the agent's policy (${c.trigger})`} at {when(c.createdAt)}
      </p>
      <ol>
        {c.steps.map((s) => (
          <li key={s.toolCallId}>
            <span class={`badge status-${s.status === 'done' ? 'succeeded' : s.status === 'pending' ? 'queued' : 'failed'}`}>
              {s.status}
            </span>{' '}
            undo <strong>{s.tool}</strong> with <strong>{s.undoTool}</strong> (step {s.step}){s.observation ? ` — ${s.observation}` : ''}
          </li>
        ))}
      </ol>
    </Section>
  );
}

/** Child runs, each with its own children read on demand (trees are a few levels deep). */
function ChildTree({ items, depth }: { items: NonNullable<RunView['children']>; depth: number }) {
  return (
    <ul class="tree">
      {items.map((c) => (
        <ChildNode key={c.id} id={c.id} agent={c.agent} status={c.status} depth={depth} />
      ))}
    </ul>
  );
}

function ChildNode({ id, agent, status, depth }: { id: string; agent: string; status: string; depth: number }) {
  const { api } = useSession();
  const [children, setChildren] = useState<RunView['children']>();
  useEffect(() => {
    if (depth < 4)
      api.client.runs.get(id).then(
        (r) => setChildren(r.children),
        () => undefined,
      );
  }, [api, id, depth]);
  return (
    <li>
      <a href={`#/runs/${encodeURIComponent(id)}`}>{agent}</a> <Status status={status} /> <code class="muted">{id}</code>
      {children?.length ? <ChildTree items={children} depth={depth + 1} /> : null}
    </li>
  );
}

/** Cancel, compensate and replay, as far as the role goes; the server has the last word and its refusal is shown. */
function Actions({ run, me, onChange }: { run: RunView; me: Me; onChange: () => void }) {
  const { api } = useSession();
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<Error>();
  // A replay is drawn against its original only once it has finished; until then, its status.
  const [replay, setReplay] = useState<{
    replayId: string;
    status: string;
    drawn?: { original: RunTrace; replay: RunTrace; diff: RunDiff };
  }>();
  const finished = TERMINAL.includes(run.status);
  const overseer = atLeast(me, 'approver');
  const act = async (fn: () => Promise<void>) => {
    setError(undefined);
    setNote(undefined);
    try {
      await fn();
      onChange();
    } catch (err) {
      setError(err as Error);
    }
  };
  const showDiff = async (replayId: string) => {
    const { status } = await api.client.runs.get(replayId);
    if (!replayDiffable(status)) {
      setReplay({ replayId, status });
      return;
    }
    const [original, again, diff] = await Promise.all([
      api.client.runs.trace(run.replayOf ?? run.id),
      api.client.runs.trace(replayId),
      api.client.runs.diff(replayId),
    ]);
    setReplay({ replayId, status, drawn: { original, replay: again, diff } });
  };
  const doReplay = () =>
    act(async () => {
      const started = await api.client.runs.replay(run.id);
      setReplay({ replayId: started.id, status: started.status });
    });
  const summary = (t: RunTrace) => ({
    status: t.status,
    steps: t.steps.map((s) => ({
      index: s.index,
      thought: s.thought,
      calls: s.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments, outcome: c.outcome })),
    })),
    finalAnswer: t.finalAnswer,
  });
  return (
    <Section title="Actions" id="actions">
      <div class="actions">
        {!finished ? (
          <button type="button" class="danger" onClick={() => act(async () => void (await api.client.runs.cancel(run.id)))}>
            Cancel run
          </button>
        ) : null}
        {finished && overseer ? (
          <button
            type="button"
            class="secondary"
            onClick={() =>
              act(async () => {
                await api.client.runs.compensate(run.id);
                setNote('Compensation requested.');
              })
            }
          >
            Compensate
          </button>
        ) : null}
        {finished ? (
          <button type="button" class="secondary" onClick={doReplay}>
            Replay
          </button>
        ) : null}
        {run.mode === 'replay' ? (
          <button type="button" class="secondary" onClick={() => act(() => showDiff(run.id))}>
            Diff with the original
          </button>
        ) : null}
      </div>
      {note ? <p role="status">{note}</p> : null}
      <ErrorNote error={error} />
      {replay ? (
        <div class="replay">
          <h3>
            Replay <a href={`#/runs/${encodeURIComponent(replay.replayId)}`}>{replay.replayId}</a>{' '}
            {replayHeadline(replay.status, replay.drawn?.diff)}
          </h3>
          {replay.drawn ? (
            <>
              <Diff
                before={summary(replay.drawn.original)}
                after={summary(replay.drawn.replay)}
                labels={['Original', 'Replay']}
                title="Original and replay"
              />
              <details>
                <summary>The server's diff</summary>
                <Json value={replay.drawn.diff} />
              </details>
            </>
          ) : (
            <button type="button" class="secondary" onClick={() => act(() => showDiff(replay.replayId))}>
              Check again
            </button>
          )}
        </div>
      ) : null}
    </Section>
  );
}
