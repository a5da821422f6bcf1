import type { ApprovalView, BatchDecision } from '@rein/contract';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ms, when } from './format.js';
import { atLeast, ErrorNote, Risk, useSession } from './ui.js';

/** Identical proposals: the same tool with the same arguments (by their hash), shown as one row. */
export interface ProposalGroup {
  key: string;
  approvals: ApprovalView[];
}

export function groupProposals(approvals: readonly ApprovalView[]): ProposalGroup[] {
  const groups = new Map<string, ApprovalView[]>();
  for (const a of approvals) {
    const key = `${a.toolName}:${a.argsHash}`;
    groups.set(key, [...(groups.get(key) ?? []), a]);
  }
  return [...groups].map(([key, list]) => ({ key, approvals: list }));
}

/** What the filter bar narrows the pending list to; the API applies them (`GET /v1/approvals`). */
export interface InboxFilters {
  tool: string;
  risk: '' | 'high' | 'critical';
  agent: string;
  requestedBy: string;
  /** Minutes: only approvals waiting at least this long. */
  olderThanMin: string;
}

export const NO_FILTERS: InboxFilters = { tool: '', risk: '', agent: '', requestedBy: '', olderThanMin: '' };

/** The list query for the filters: empty fields are left out. */
export function filterQuery(f: InboxFilters, now = Date.now()) {
  const minutes = Number(f.olderThanMin);
  return {
    ...(f.tool ? { tool: f.tool } : {}),
    ...(f.risk ? { risk: f.risk } : {}),
    ...(f.agent ? { agent: f.agent } : {}),
    ...(f.requestedBy ? { requestedBy: f.requestedBy } : {}),
    ...(f.olderThanMin && minutes > 0 ? { createdBefore: new Date(now - minutes * 60_000).toISOString() } : {}),
  };
}

const BATCH = 100;

/**
 * The pending approvals as an approver works through them: identical proposals grouped
 * with a count, selectable, decided together through the batch route (each one checked
 * and recorded on its own), with filters and keys — j/k move, x selects, a approves,
 * r rejects (with a reason), Enter opens.
 */
export function Inbox({
  rows,
  filters,
  onFilters,
  onDecided,
}: {
  rows: ApprovalView[];
  filters: InboxFilters;
  onFilters: (f: InboxFilters) => void;
  onDecided: () => void;
}) {
  const { api, me } = useSession();
  const groups = useMemo(() => groupProposals(rows), [rows]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [focus, setFocus] = useState(0);
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState<string>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const table = useRef<HTMLTableSectionElement>(null);
  const reasonField = useRef<HTMLInputElement>(null);
  const root = useRef<HTMLDivElement>(null);
  // A plain user decides nothing from here: no bulk button they could not use.
  const mayDecideAny = atLeast(me, 'approver');

  const chosen = groups.filter((g) => selected.has(g.key));
  const ids = chosen.flatMap((g) => g.approvals.map((a) => a.id));

  async function decide(verdict: 'approve' | 'reject') {
    if (ids.length === 0 || busy) return;
    if (verdict === 'reject' && !reason.trim()) {
      reasonField.current?.focus();
      setError(new Error('A rejection needs a reason (the model hears it).'));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const results: BatchDecision['results'] = [];
      for (let i = 0; i < ids.length; i += BATCH) {
        const body = { ids: ids.slice(i, i + BATCH), verdict, ...(verdict === 'reject' ? { comment: reason.trim() } : {}) };
        results.push(...(await api.client.approvals.decideMany(body)).results);
      }
      const failed = results.filter((r) => !r.ok);
      setOutcome(
        `${verdict === 'approve' ? 'Approved' : 'Rejected'} ${results.length - failed.length} of ${results.length}` +
          (failed.length ? `; not decided: ${failed.map((r) => `${r.id} (${r.error?.code ?? 'refused'})`).join(', ')}` : '.'),
      );
      setSelected(new Set());
      setReason('');
      onDecided();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }

  const toggle = (key: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(key)) next.delete(key);
      else next.add(key);
      return next;
    });

  // Keys act on the list only while focus is in it (never while typing in a field).
  const onKey = (e: KeyboardEvent) => {
    if ((e.target as HTMLElement).closest('input, textarea, select')) return;
    const group = groups[focus];
    if (e.key === 'j' || e.key === 'ArrowDown') setFocus((f) => Math.min(groups.length - 1, f + 1));
    else if (e.key === 'k' || e.key === 'ArrowUp') setFocus((f) => Math.max(0, f - 1));
    else if (e.key === 'x' && group) toggle(group.key);
    else if (e.key === 'a' && mayDecideAny) void decide('approve');
    else if (e.key === 'r' && mayDecideAny) reasonField.current?.focus();
    else if (e.key === 'Enter' && group) location.hash = `#/approvals/${encodeURIComponent(group.approvals[0]?.id ?? '')}`;
    else return;
    e.preventDefault();
  };
  // Listened to on the inbox's element: the rows (focusable) take the keys while focused.
  const onKeyRef = useRef(onKey);
  onKeyRef.current = onKey;
  useEffect(() => {
    const el = root.current;
    const listener = (e: KeyboardEvent) => onKeyRef.current(e);
    el?.addEventListener('keydown', listener);
    return () => el?.removeEventListener('keydown', listener);
  }, []);
  useEffect(() => {
    (table.current?.querySelectorAll('tr')[focus] as HTMLElement | undefined)?.focus();
  }, [focus]);
  useEffect(() => setFocus((f) => Math.min(f, Math.max(0, groups.length - 1))), [groups.length]);

  const field = (name: keyof InboxFilters, label: string) => (
    <div class="field inline">
      <label for={`filter-${name}`}>{label}</label>
      <input
        id={`filter-${name}`}
        value={filters[name]}
        inputMode={name === 'olderThanMin' ? 'numeric' : 'text'}
        onChange={(e) => onFilters({ ...filters, [name]: e.currentTarget.value })}
      />
    </div>
  );

  return (
    <div ref={root}>
      <form class="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
        {field('tool', 'Tool')}
        <div class="field inline">
          <label for="filter-risk">Risk</label>
          <select
            id="filter-risk"
            value={filters.risk}
            onChange={(e) => onFilters({ ...filters, risk: e.currentTarget.value as InboxFilters['risk'] })}
          >
            <option value="">any</option>
            <option value="high">high</option>
            <option value="critical">critical</option>
          </select>
        </div>
        {field('agent', 'Agent')}
        {field('requestedBy', 'Requested by')}
        {field('olderThanMin', 'Waiting at least (min)')}
      </form>
      <p class="muted" id="inbox-keys">
        Keys: j/k move · x select · a approve selected · r reject selected (reason first) · Enter open
      </p>
      <div class="table-wrap">
        <table class="stack">
          <thead>
            <tr>
              <th scope="col">Select</th>
              <th scope="col">Risk</th>
              <th scope="col">What</th>
              <th scope="col">Needs</th>
              <th scope="col">Requested by</th>
              <th scope="col">Waiting</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody id="pending" ref={table}>
            {groups.map((g, i) => {
              const a = g.approvals[0] as ApprovalView;
              const oldest = g.approvals.reduce((o, x) => (x.createdAt < o.createdAt ? x : o), a);
              const requesters = [...new Set(g.approvals.map((x) => x.requestedBy))];
              return (
                <tr
                  key={g.key}
                  data-approval-id={a.id}
                  data-count={g.approvals.length}
                  tabIndex={i === focus ? 0 : -1}
                  aria-selected={selected.has(g.key)}
                  class={i === focus ? 'focused' : undefined}
                  onFocus={() => setFocus(i)}
                >
                  <td data-label="Select">
                    <input
                      type="checkbox"
                      aria-label={`Select ${a.summary}${g.approvals.length > 1 ? ` (${g.approvals.length} identical)` : ''}`}
                      checked={selected.has(g.key)}
                      onChange={() => toggle(g.key)}
                    />
                  </td>
                  <td data-label="Risk">
                    <Risk risk={a.risk} />
                  </td>
                  <td data-label="What">
                    <a href={`#/approvals/${encodeURIComponent(a.id)}`}>{a.summary}</a>
                    {g.approvals.length > 1 ? <span class="badge count"> ×{g.approvals.length}</span> : null}
                    <div class="muted">
                      {a.toolName}
                      {a.context
                        ? ` · ${Object.entries(a.context)
                            .map(([k, v]) => `${k}: ${String(v)}`)
                            .join(' · ')}`
                        : ''}
                    </div>
                  </td>
                  <td data-label="Needs">
                    {a.deciders.role}
                    {a.quorum ? ` · ${a.approvals?.length ?? 0}/${a.quorum}` : ''}
                  </td>
                  <td data-label="Requested by">{requesters.join(', ')}</td>
                  <td data-label="Waiting">{ms(Date.now() - Date.parse(oldest.createdAt))}</td>
                  <td data-label="Expires">{when(oldest.expiresAt)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {mayDecideAny ? (
        <div class="bulk actions">
          <span id="selection" role="status">
            {ids.length ? `${ids.length} selected` : 'Nothing selected'}
          </span>
          <button type="button" id="bulk-approve" disabled={ids.length === 0 || busy} onClick={() => decide('approve')}>
            Approve selected
          </button>
          <label for="bulk-reason">Reason</label>
          <input
            id="bulk-reason"
            ref={reasonField}
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') void decide('reject');
            }}
          />
          <button
            type="button"
            id="bulk-reject"
            class="danger"
            disabled={ids.length === 0 || busy || !reason.trim()}
            onClick={() => decide('reject')}
          >
            Reject selected
          </button>
        </div>
      ) : (
        <p class="muted">Approvers decide these; you see the ones your runs asked for.</p>
      )}
      <p id="bulk-result" role="status">
        {outcome}
      </p>
      <ErrorNote error={error} />
    </div>
  );
}
