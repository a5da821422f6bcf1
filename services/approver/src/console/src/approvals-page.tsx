import type { ApprovalPreview, ApprovalView, AuditReceipt, PlanStep } from '@rein/contract';
import { Fragment } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, follow } from './api.js';
import { diffLines, hasChanges } from './diff.js';
import { ms, when } from './format.js';
import { filterQuery, Inbox, type InboxFilters, NO_FILTERS } from './inbox.js';
import { ApprovalOutcome } from './run-page.js';
import { type JsonSchema, SchemaForm } from './schema-form.js';
import { Diff, ErrorNote, Json, Risk, Section, Status, useLoad, useSession } from './ui.js';

type Obj = Record<string, unknown>;

/** Pending approvals (all of them, page by page) and the latest decided ones; live from the tenant's approval feed. */
export function ApprovalsPage() {
  const { api } = useSession();
  const [filters, setFilters] = useState<InboxFilters>(NO_FILTERS);
  const pending = useLoad(() => api.client.approvals.list({ status: 'pending', limit: 100, ...filterQuery(filters) }), [api, filters]);
  const recent = useLoad(() => api.client.approvals.list({ limit: 30 }), [api]);
  const uncertain = useLoad(() => api.client.approvals.uncertainEffects(), [api]);
  const [live, setLive] = useState(false);
  const reloads = useRef({ pending: pending.reload, recent: recent.reload, uncertain: uncertain.reload });
  reloads.current = { pending: pending.reload, recent: recent.reload, uncertain: uncertain.reload };
  useEffect(() => {
    const stop = new AbortController();
    setLive(true);
    follow(api.client.approvals.stream({ signal: stop.signal }), () => {
      void reloads.current.pending();
      void reloads.current.recent();
      void reloads.current.uncertain();
    })
      .catch(() => undefined)
      .finally(() => setLive(false));
    return () => stop.abort();
  }, [api]);
  // Pending ones come from their own index, a page at a time: no number of decided ones hides one.
  const [extra, setExtra] = useState<{ approvals: ApprovalView[]; nextCursor?: string; after?: string }>({ approvals: [] });
  const firstCursor = pending.data?.nextCursor;
  const cursor = extra.after === firstCursor ? extra.nextCursor : firstCursor;
  const more = async () => {
    if (!cursor) return;
    const page = await api.client.approvals.list({ status: 'pending', limit: 100, cursor, ...filterQuery(filters) });
    setExtra((e) => ({
      approvals: [...(e.after === firstCursor ? e.approvals : []), ...page.approvals],
      after: firstCursor,
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
    }));
  };
  const seen = new Set((pending.data?.approvals ?? []).map((a) => a.id));
  const rows = [...(pending.data?.approvals ?? []), ...(extra.after === firstCursor ? extra.approvals.filter((a) => !seen.has(a.id)) : [])];
  const decided = (recent.data?.approvals ?? []).filter((a) => a.status !== 'pending');
  return (
    <>
      <h1>Approvals {live ? <span class="live">· live</span> : null}</h1>
      <Section title={`Pending (${rows.length}${cursor ? '+' : ''})`} id="pending-section">
        <ErrorNote error={pending.error} />
        <Inbox rows={rows} filters={filters} onFilters={setFilters} onDecided={() => void pending.reload()} />
        {pending.data && rows.length === 0 ? <p class="muted">Nothing waits for a decision.</p> : null}
        {cursor ? (
          <button type="button" class="secondary" id="pending-more" onClick={more}>
            Load more pending
          </button>
        ) : null}
      </Section>
      {uncertain.data?.effects.length ? (
        <Section title="Writes with an unknown outcome" id="uncertain-section">
          <p class="muted">Interrupted mid-call and not run again: check the back end by hand.</p>
          <ul id="uncertain">
            {uncertain.data.effects.map((e) => (
              <li key={`${e.runId}:${e.step}:${e.toolCallId}`}>
                <strong>{e.tool}</strong> — <a href={`#/runs/${encodeURIComponent(e.runId)}`}>run {e.runId}</a>, step {e.step}, call{' '}
                <code>{e.toolCallId}</code> <span class="muted">{when(e.at)}</span>
              </li>
            ))}
          </ul>
        </Section>
      ) : null}
      <Section title="Recently decided" id="recent-section">
        {recent.data && decided.length === 0 ? <p class="muted">Nothing decided yet.</p> : null}
        <ul id="recent">
          {decided.map((a) => (
            <li key={a.id}>
              <Status status={a.status} /> <a href={`#/approvals/${encodeURIComponent(a.id)}`}>{a.summary}</a>
              <span class="muted">
                {a.decidedBy ? ` by ${a.decidedBy}` : ''} {a.decidedAt ? when(a.decidedAt) : ''} {a.comment ? `· “${a.comment}”` : ''}
              </span>
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}

const stepsOf = (a: ApprovalView): PlanStep[] => ((a.approvedArguments ?? a.arguments) as { steps?: PlanStep[] }).steps ?? [];

/** One approval: what it asks, the rule that applies, an edit form from the tool's schema, the re-judged risk, and the decision. */
export function ApprovalPage({ id }: { id: string }) {
  const { api, me } = useSession();
  const loaded = useLoad(() => api.client.approvals.get(id), [api, id]);
  const base = useLoad(() => api.client.approvals.preview(id), [api, id]);
  const context = useLoad(() => api.client.approvals.context(id), [api, id]);
  const approval = loaded.data;
  const isPlan = approval?.kind === 'plan';
  /** A question a call's work asks (a remote agent's): approving sends the answer written into its arguments. */
  const isQuestion = approval?.kind === 'input';
  const current = useMemo(() => (approval ? ((approval.approvedArguments ?? approval.arguments) as Obj) : {}), [approval]);
  const [edited, setEdited] = useState<Obj | null>(null);
  const [stepEdits, setStepEdits] = useState<Record<string, Obj>>({});
  const [judged, setJudged] = useState<ApprovalPreview>();
  const [judgeError, setJudgeError] = useState<Error>();
  const [comment, setComment] = useState('');
  const [reason, setReason] = useState('');
  const [result, setResult] = useState<string>();
  /** The decision's signed receipt, when the fleet signs them: the decider keeps it (a download). */
  const [receipt, setReceipt] = useState<AuditReceipt>();
  const [error, setError] = useState<Error>();

  // The edit as the API takes it: the whole arguments of a tool call, `{"<step>": args}` of a plan.
  const edit = useMemo((): Obj | undefined => {
    if (!approval) return undefined;
    if (isPlan) {
      const steps = stepsOf(approval);
      const changed = Object.entries(stepEdits).filter(([k, v]) => hasChanges(diffLines(steps.find((s) => String(s.step) === k)?.args, v)));
      return changed.length ? Object.fromEntries(changed) : undefined;
    }
    return edited && hasChanges(diffLines(current, edited)) ? edited : undefined;
  }, [approval, isPlan, stepEdits, edited, current]);

  // Judged again on every change (debounced): the risk and rule the edit would get.
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => {
    clearTimeout(timer.current);
    if (!edit) {
      setJudged(undefined);
      setJudgeError(undefined);
      return;
    }
    timer.current = setTimeout(() => {
      api.client.approvals.preview(id, edit).then(
        (p) => {
          setJudged(p);
          setJudgeError(undefined);
        },
        (err: Error) => {
          setJudged(undefined);
          setJudgeError(err);
        },
      );
    }, 250);
  }, [api, id, edit]);

  const decide = useCallback(
    async (kind: 'approve' | 'reject') => {
      setError(undefined);
      setResult(undefined);
      setReceipt(undefined);
      try {
        const decided =
          kind === 'approve'
            ? await api.client.approvals.approve(id, { ...(comment ? { comment } : {}), ...(edit ? { arguments: edit } : {}) })
            : await api.client.approvals.reject(id, reason);
        setResult(
          decided.status === 'pending'
            ? `Counted: it needs ${decided.approvalsNeeded ?? 0} more approval(s).`
            : `${decided.status === 'approved' ? 'Approved' : 'Rejected'}${decided.editedBy ? ' with edits' : ''}.`,
        );
        setReceipt(decided.receipt);
        setEdited(null);
        setStepEdits({});
        await loaded.reload();
        await base.reload();
      } catch (err) {
        setError(err as Error);
      }
    },
    [api, id, comment, reason, edit, loaded, base],
  );

  if (loaded.error)
    return (
      <>
        <h1>Approval</h1>
        <ErrorNote
          error={
            loaded.error instanceof ApiError && loaded.error.status === 404
              ? new Error('No such approval (or not yours to see).')
              : loaded.error
          }
        />
      </>
    );
  if (!approval) return <p class="muted">Loading approval…</p>;
  const shown = judged?.approval ?? base.data?.approval ?? approval;
  const rights = judged ?? base.data;
  const open = approval.status === 'pending';
  const schemas = (base.data?.parameters ?? {}) as Record<string, JsonSchema>;

  return (
    <>
      <p>
        <a href="#/approvals">← Approvals</a> · <a href={`#/runs/${encodeURIComponent(approval.runId)}`}>Open the run</a>
      </p>
      <h1>
        {approval.summary} <Status status={approval.status} />
      </h1>
      <dl class="facts card" id="rule">
        <dt>Tool</dt>
        <dd>{approval.toolName}</dd>
        <dt>Risk</dt>
        <dd>
          <Risk risk={shown.risk} />
          {judged && judged.approval.risk !== approval.risk ? (
            <span id="rejudged"> (was {approval.risk}; judged again for the edit)</span>
          ) : null}
        </dd>
        <dt>Who may decide</dt>
        <dd id="deciders">
          {shown.deciders.role} or higher
          {shown.deciders.requester === 'never'
            ? ` · four eyes: ${approval.requestedBy} (who asked) may not decide`
            : ` · ${approval.requestedBy} (who asked) may approve only as proposed (no edits), with the ${shown.requiredRole} role`}
        </dd>
        {shown.quorum ? (
          <>
            <dt>Quorum</dt>
            <dd id="quorum">
              {shown.approvals?.length ?? 0} of {shown.quorum} approvals
              {shown.approvalsNeeded ? ` · ${shown.approvalsNeeded} more needed` : ''}
            </dd>
          </>
        ) : null}
        {shown.escalate || shown.escalations?.length ? (
          <>
            <dt>Escalation</dt>
            <dd id="escalation">
              {shown.escalate ? `to ${shown.escalate.toRole} after ${ms(shown.escalate.afterMs)} undecided` : 'no further escalation'}
              {shown.escalations?.map((e) => (
                <div key={e.at} class="muted">
                  escalated {e.from} → {e.to} at {when(e.at)}
                </div>
              ))}
            </dd>
          </>
        ) : null}
        <dt>Requested by</dt>
        <dd>
          {approval.requestedBy} · {when(approval.createdAt)}
        </dd>
        <dt>Expires</dt>
        <dd>{when(approval.expiresAt)}</dd>
      </dl>
      {context.data ? (
        <Section title="Context" id="context">
          <dl class="facts">
            {Object.entries(context.data.fields ?? {}).map(([k, v]) => (
              <Fragment key={k}>
                <dt>{k}</dt>
                <dd>{String(v)}</dd>
              </Fragment>
            ))}
            <dt>Asked by the run</dt>
            <dd id="context-input">{context.data.input}</dd>
            {context.data.thought ? (
              <>
                <dt>The agent's reasoning</dt>
                <dd id="context-thought">{context.data.thought}</dd>
              </>
            ) : null}
            <dt>Waiting</dt>
            <dd>
              {ms(context.data.waitedMs)}
              {context.data.escalatesAt ? ` · escalates ${when(context.data.escalatesAt)}` : ''} · expires {when(context.data.expiresAt)}
            </dd>
          </dl>
          {context.data.observations.length ? (
            <>
              <h3>What it had read</h3>
              <ul id="context-observations">
                {context.data.observations.map((o) => (
                  <li key={`${o.step}-${o.toolName}`}>
                    <strong>{o.toolName}</strong> <span class="muted">(step {o.step})</span>
                    <pre class="json">{o.observation}</pre>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </Section>
      ) : null}
      {open && rights && !rights.mayDecide ? (
        <p class="refusal" role="alert" id="refusal">
          You cannot decide this: {rights.refusal}
        </p>
      ) : null}
      {!open ? <ApprovalOutcome a={approval} /> : null}

      {open ? (
        <Section title={isPlan ? 'The plan, step by step' : isQuestion ? 'Your answer' : 'Arguments'} id="edit">
          {isPlan ? (
            stepsOf(approval).map((s) => {
              const schema = schemas[s.action];
              const value = stepEdits[String(s.step)] ?? s.args;
              const setValue = (v: Obj) => setStepEdits({ ...stepEdits, [String(s.step)]: v });
              return (
                <div key={s.step} class="plan-step">
                  <h3>
                    {s.step}. {s.action} <span class="muted">— {s.desc}</span>
                  </h3>
                  {schema ? (
                    <SchemaForm
                      schema={schema}
                      value={value}
                      onChange={setValue}
                      idPrefix={`step-${s.step}`}
                      legend={`Arguments of step ${s.step}`}
                    />
                  ) : (
                    <Json value={s.args} />
                  )}
                  {stepEdits[String(s.step)] ? (
                    <Diff before={s.args} after={value} labels={['Proposed', 'Edited']} title={`Edit of step ${s.step}`} />
                  ) : null}
                </div>
              );
            })
          ) : schemas[approval.toolName] ? (
            <SchemaForm
              schema={schemas[approval.toolName] as JsonSchema}
              value={edited ?? current}
              onChange={setEdited}
              idPrefix="arg"
              legend={
                isQuestion
                  ? `Your answer to the question above (approving sends it through ${approval.toolName})`
                  : `Arguments of ${approval.toolName} (edit to approve with changes)`
              }
            />
          ) : (
            <Json value={current} />
          )}
          {!isPlan && edited ? <Diff before={current} after={edited} labels={['Proposed', 'Edited']} title="Your edit" /> : null}
          {edit ? (
            <p class="muted" id="edit-note" role="status">
              {judged
                ? `Judged again: risk ${judged.approval.risk}, needs ${judged.approval.deciders.role}${judged.mayDecide ? '; you may approve it.' : `; ${judged.refusal}`}`
                : judgeError
                  ? ''
                  : 'Judging the edit…'}
            </p>
          ) : null}
          <ErrorNote error={judgeError} />
        </Section>
      ) : null}

      {/* No button for a decision the caller may not make: shown only once the API has said they may decide it as it stands. */}
      {open && base.data?.mayDecide ? (
        <Section title="Decide" id="decide">
          <div class="field">
            <label for="comment">Comment (optional, kept with an approval)</label>
            <input id="comment" value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
          </div>
          <div class="actions">
            <button
              type="button"
              disabled={judgeError !== undefined || judged?.mayDecide === false || (isQuestion && !edit)}
              onClick={() => decide('approve')}
            >
              {isQuestion ? 'Send the answer' : edit ? 'Approve with edits' : 'Approve'}
            </button>
          </div>
          <div class="field">
            <label for="reason">Reason (required to reject; the model hears it)</label>
            <textarea id="reason" rows={2} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          </div>
          <div class="actions">
            <button type="button" class="danger" disabled={reason.trim() === ''} onClick={() => decide('reject')}>
              Reject
            </button>
          </div>
        </Section>
      ) : null}
      <p id="decide-result" role="status">
        {result}
      </p>
      {receipt ? (
        <p id="decide-receipt">
          <a
            id="receipt-download"
            download={`rein-receipt-${receipt.entry.tenantId}-${receipt.seq}.json`}
            href={`data:application/json;charset=utf-8,${encodeURIComponent(JSON.stringify(receipt, null, 2))}`}
          >
            Download the signed receipt
          </a>{' '}
          of this decision (entry {receipt.seq} of the decision log; check it offline with <code>rein audit verify --receipt</code>)
        </p>
      ) : null}
      <ErrorNote error={error} />
      {me.userId === approval.requestedBy && open && base.data ? (
        <p class="muted" id="requester-note">
          {base.data.mayDecide
            ? 'You asked for this: you may decide it as proposed; an edit needs someone else.'
            : 'You asked for this; someone with the role above decides.'}
        </p>
      ) : null}
    </>
  );
}
