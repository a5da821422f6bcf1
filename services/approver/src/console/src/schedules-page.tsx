import type { ScheduleView } from '@rein/contract';
import { useState } from 'preact/hooks';
import { inZone, when } from './format.js';
import { ErrorNote, Section, Status, useLoad, useSession } from './ui.js';

/** Enable or disable: a PATCH of `enabled`. Enabling someone else's schedule makes the caller its owner (the server's rule). */
function Toggle({ s, onDone }: { s: ScheduleView; onDone: (s: ScheduleView) => void }) {
  const { api, me } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const theirs = s.userId !== me.userId;
  const flip = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onDone(await api.client.schedules.update(s.id, { enabled: !s.enabled }));
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class={s.enabled ? 'secondary' : ''}
        disabled={busy}
        onClick={flip}
        aria-label={`${s.enabled ? 'Disable' : 'Enable'} schedule ${s.cron} ${s.agent}`}
        title={!s.enabled && theirs ? `Enabling makes you its owner: its runs will run as you, not ${s.userId}` : undefined}
      >
        {s.enabled ? 'Disable' : 'Enable'}
      </button>
      <ErrorNote error={error} />
    </>
  );
}

const state = (s: ScheduleView) => (s.enabled ? 'enabled' : s.paused ? 'paused' : 'disabled');

/** The caller's schedules (an admin's: the tenant's), each with its next fire time in its own time zone. */
export function SchedulesPage() {
  const { api } = useSession();
  const list = useLoad(() => api.client.schedules.list(), [api]);
  const [changed, setChanged] = useState<Record<string, ScheduleView>>({});
  const rows = (list.data ?? []).map((s) => changed[s.id] ?? s);
  return (
    <>
      <h1>Schedules</h1>
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table class="stack">
          <caption class="sr-only">Schedules</caption>
          <thead>
            <tr>
              <th scope="col">Schedule</th>
              <th scope="col">State</th>
              <th scope="col">Agent</th>
              <th scope="col">Input</th>
              <th scope="col">Next run (its time zone)</th>
              <th scope="col">Owner</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody id="schedules">
            {rows.map((s) => (
              <tr key={s.id} data-schedule-id={s.id}>
                <td data-label="Schedule">
                  <a href={`#/schedules/${encodeURIComponent(s.id)}`}>
                    <code>{s.cron}</code>
                  </a>{' '}
                  <span class="muted">{s.timezone}</span>
                </td>
                <td data-label="State">
                  <Status status={state(s)} />
                </td>
                <td data-label="Agent">{s.agent}</td>
                <td data-label="Input" class="input-cell">
                  {s.input}
                </td>
                <td data-label="Next run">{s.nextRunAt ? inZone(s.nextRunAt, s.timezone) : '—'}</td>
                <td data-label="Owner">{s.userId}</td>
                <td data-label="Action">
                  <Toggle s={s} onDone={(next) => setChanged((c) => ({ ...c, [next.id]: next }))} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.data && rows.length === 0 ? <p class="muted">No schedules. Create them with the API or `rein schedules`.</p> : null}
    </>
  );
}

/** One schedule: what it runs, why it is paused, its next fire times in its time zone, and what its firings came to. */
export function SchedulePage({ id }: { id: string }) {
  const { api } = useSession();
  const detail = useLoad(() => api.client.schedules.get(id), [api, id]);
  const s = detail.data;
  const runs = new Map((s?.runs ?? []).map((r) => [r.id, r]));
  return (
    <>
      <p>
        <a href="#/schedules">← Schedules</a>
      </p>
      <h1>
        Schedule <code>{s?.cron ?? id}</code> {s ? <Status status={state(s)} /> : null}
      </h1>
      <ErrorNote error={detail.error} />
      {s ? (
        <>
          <dl class="facts card">
            <dt>Agent</dt>
            <dd>{s.agent}</dd>
            <dt>Input</dt>
            <dd class="prose">{s.input}</dd>
            <dt>Time zone</dt>
            <dd>{s.timezone}</dd>
            <dt>Overlap</dt>
            <dd>{s.overlap === 'skip' ? 'skip a firing while the previous run is active' : 'allow'}</dd>
            <dt>After an outage</dt>
            <dd>{s.catchUp === 'last' ? 'run the latest missed firing once' : 'run none of the missed firings'}</dd>
            <dt>Owner</dt>
            <dd>{s.userId} (each firing runs as them)</dd>
            <dt>Updated</dt>
            <dd>{when(s.updatedAt)}</dd>
          </dl>
          {s.paused ? (
            <p class="refusal" id="paused" role="status">
              Paused {when(s.paused.at)}: {s.paused.reason} ({s.paused.code}). Enabling it again runs it with the roles its new owner holds.
            </p>
          ) : null}
          <div class="actions">
            <Toggle s={s} onDone={() => void detail.reload()} />
          </div>
          <Section title={`Next firings (${s.timezone})`} id="next-firings">
            {s.nextFirings.length ? (
              <ol id="next-firings-list">
                {s.nextFirings.map((t) => (
                  <li key={t}>
                    <time dateTime={t}>{inZone(t, s.timezone)}</time> <span class="muted">({when(t)} UTC)</span>
                  </li>
                ))}
              </ol>
            ) : (
              <p class="muted">None: it is {state(s)}.</p>
            )}
          </Section>
          <Section title="Firings, newest first" id="history">
            {s.history.length ? (
              <div class="table-wrap">
                <table class="stack">
                  <thead>
                    <tr>
                      <th scope="col">Due</th>
                      <th scope="col">Outcome</th>
                      <th scope="col">Run</th>
                      <th scope="col">Why</th>
                    </tr>
                  </thead>
                  <tbody id="firings">
                    {s.history.map((f) => (
                      <tr key={`${f.scheduledFor}:${f.at}`} data-outcome={f.outcome}>
                        <td data-label="Due">{inZone(f.scheduledFor, s.timezone)}</td>
                        <td data-label="Outcome">
                          <span class="badge">{f.outcome}</span>
                        </td>
                        <td data-label="Run">
                          {f.runId ? <a href={`#/runs/${encodeURIComponent(f.runId)}`}>{f.runId.slice(0, 12)}</a> : '—'}
                          {f.runId && runs.get(f.runId) ? (
                            <>
                              {' '}
                              <Status status={runs.get(f.runId)?.status ?? ''} />
                            </>
                          ) : null}
                        </td>
                        <td data-label="Why">
                          {f.reason ?? ''}
                          {f.missed ? ` · ${f.missed.count}${f.missed.capped ? '+' : ''} fire time(s) missed` : ''}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            ) : (
              <p class="muted">It has not fired yet.</p>
            )}
          </Section>
        </>
      ) : null}
    </>
  );
}
