import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import { ApiError } from './api.js';
import { type DiffRow, diffLines } from './diff.js';
import { pretty } from './format.js';

export interface Me {
  tenantId: string;
  userId: string;
  roles: string[];
}

export interface Session {
  api: Api;
  me: Me;
  traceUrlTemplate?: string;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('no session');
  return session;
}

const RANK = ['user', 'approver', 'supervisor', 'admin'];
/** Whether the caller holds `role` or a higher one (the API decides; this only hides what it would refuse). */
export const atLeast = (me: Me, role: string): boolean => me.roles.some((r) => RANK.indexOf(r) >= RANK.indexOf(role));

/** Loads on mount and whenever `deps` change; `reload` loads again without blanking what is shown. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({ loading: true });
  const reload = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    return load().then(
      (data) => setState({ data, loading: false }),
      (error: Error) => setState({ error, loading: false }),
    );
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { ...state, reload };
}

export function Status({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status.replace('_', ' ')}</span>;
}

export function Risk({ risk }: { risk: string }) {
  return <span class={`badge risk-${risk}`}>{risk}</span>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{pretty(value)}</pre>;
}

export function ErrorNote({ error }: { error?: Error }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof ApiError ? `${error.message} (${error.code})` : error.message}
    </p>
  );
}

/** Two values side by side, line by line; `labels` name the columns. */
export function Diff({ before, after, labels, title }: { before: unknown; after: unknown; labels: [string, string]; title: string }) {
  const rows: DiffRow[] = diffLines(before, after);
  return (
    <table class="diff" aria-label={title}>
      <thead>
        <tr>
          <th scope="col">{labels[0]}</th>
          <th scope="col">{labels[1]}</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i} class={`diff-${r.kind}`}>
            <td class={r.kind === 'removed' || r.kind === 'changed' ? 'del' : ''}>
              {r.kind === 'removed' || r.kind === 'changed' ? <span class="sign">− </span> : null}
              {r.left ?? ''}
            </td>
            <td class={r.kind === 'added' || r.kind === 'changed' ? 'ins' : ''}>
              {r.kind === 'added' || r.kind === 'changed' ? <span class="sign">+ </span> : null}
              {r.right ?? ''}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" aria-labelledby={id ? `${id}-h` : undefined} id={id}>
      <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
      {children}
    </section>
  );
}

/** Re-runs `fn` every `everyMs` while `active`. */
export function useInterval(fn: () => void, everyMs: number, active: boolean) {
  useEffect(() => {
    if (!active) return;
    const t = setInterval(fn, everyMs);
    return () => clearInterval(t);
  }, [fn, everyMs, active]);
}
