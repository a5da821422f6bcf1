import type { ListRunsParams, RunView } from '@rein/contract';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { ago, STATUSES, TERMINAL, tokens, usd } from './format.js';
import { atLeast, ErrorNote, Status, useInterval, useSession } from './ui.js';

interface Filters {
  status: string;
  agent: string;
  userId: string;
  version: string;
  from: string;
  to: string;
  q: string;
}
const EMPTY: Filters = { status: '', agent: '', userId: '', version: '', from: '', to: '', q: '' };
const iso = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** The tenant's runs (a user's own), filtered and searched, newest first; active ones refresh by themselves. */
export function RunsPage() {
  const { api, me } = useSession();
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [runs, setRuns] = useState<RunView[]>([]);
  const [cursor, setCursor] = useState<string | undefined>();
  const [finishedOnly, setFinishedOnly] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const [loaded, setLoaded] = useState(false);

  const list = useCallback(
    (cursor?: string) => {
      const set = (v: string) => (v === '' ? undefined : v);
      const params = {
        status: set(filters.status) as ListRunsParams['status'],
        agent: set(filters.agent),
        userId: set(filters.userId),
        // A search reads the archive, whose window is from/to; a listing's is createdAfter/createdBefore.
        ...(filters.q
          ? { q: filters.q, from: iso(filters.from), to: iso(filters.to) }
          : { createdAfter: iso(filters.from), createdBefore: iso(filters.to) }),
        cursor,
        limit: 50,
      };
      return api.client.runs.list(params);
    },
    [api, filters],
  );

  const load = useCallback(async () => {
    try {
      const page = await list();
      setRuns(page.runs);
      setCursor(page.nextCursor);
      setFinishedOnly(page.finishedOnly === true);
      setError(undefined);
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'archive_unavailable' && err.status === 409
          ? new Error('Text search needs the run archive (REIN_ARCHIVE_URL); without it, filter by status, agent, user and time.')
          : (err as Error),
      );
    } finally {
      setLoaded(true);
    }
  }, [list]);
  useEffect(() => {
    void load();
  }, [load]);
  // Live status: the first page again while any shown run can still change.
  const refresh = useCallback(async () => {
    const page = await list().catch(() => null);
    if (!page) return;
    setRuns((shown) => {
      const fresh = new Map(page.runs.map((r) => [r.id, r]));
      const known = new Set(shown.map((r) => r.id));
      return [...page.runs.filter((r) => !known.has(r.id)), ...shown.map((r) => fresh.get(r.id) ?? r)];
    });
  }, [list]);
  useInterval(refresh, 2000, runs.some((r) => !TERMINAL.includes(r.status)) || runs.length === 0);

  const more = async () => {
    if (!cursor) return;
    const page = await list(cursor);
    setRuns((shown) => [...shown, ...page.runs]);
    setCursor(page.nextCursor);
  };
  const shown = filters.version ? runs.filter((r) => r.appVersion === filters.version) : runs;
  const set = (k: keyof Filters) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });

  return (
    <>
      <h1>Runs</h1>
      <form
        class="filters card"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
        }}
      >
        <label>
          Search
          <input type="search" name="q" value={draft.q} onInput={set('q')} placeholder="text in the input or answer" />
        </label>
        <label>
          Status
          <select name="status" value={draft.status} onChange={set('status')}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent
          <input name="agent" value={draft.agent} onInput={set('agent')} />
        </label>
        {atLeast(me, 'approver') ? (
          <label>
            User
            <input name="userId" value={draft.userId} onInput={set('userId')} />
          </label>
        ) : null}
        <label>
          Version
          <input name="version" value={draft.version} onInput={set('version')} />
        </label>
        <label>
          From
          <input type="datetime-local" name="from" value={draft.from} onInput={set('from')} />
        </label>
        <label>
          To
          <input type="datetime-local" name="to" value={draft.to} onInput={set('to')} />
        </label>
        <div class="actions">
          <button type="submit">Apply</button>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setDraft(EMPTY);
              setFilters(EMPTY);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      <div class="table-wrap">
        <table class="runs stack">
          <caption class="sr-only">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Agent</th>
              <th scope="col">Input</th>
              <th scope="col">Tokens</th>
              <th scope="col">Cost</th>
              <th scope="col">Version</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody id="runs">
            {shown.map((r) => (
              <tr key={r.id} data-run-id={r.id}>
                <td data-label="Run">
                  <a href={`#/runs/${encodeURIComponent(r.id)}`}>{r.id.slice(0, 12)}</a>
                </td>
                <td data-label="Status">
                  <Status status={r.status} />
                </td>
                <td data-label="Agent">{r.agent}</td>
                <td data-label="Input" class="input-cell">
                  {r.input}
                </td>
                <td data-label="Tokens" class="num">
                  {tokens(r.usage.totalTokens)}
                </td>
                <td data-label="Cost" class="num">
                  {usd(r.costUsd)}
                </td>
                <td data-label="Version">{r.appVersion ?? '—'}</td>
                <td data-label="Created">
                  <time dateTime={r.createdAt}>{ago(r.createdAt)}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {finishedOnly ? (
        <p class="muted" data-testid="finished-only">
          Finished runs only: a search reads the archive. Runs still running or waiting for an approval are listed without a search text.
        </p>
      ) : null}
      {loaded && shown.length === 0 && !error ? <p class="muted">No runs match.</p> : null}
      {cursor ? (
        <button type="button" class="secondary" onClick={more}>
          Load more runs
        </button>
      ) : null}
    </>
  );
}
