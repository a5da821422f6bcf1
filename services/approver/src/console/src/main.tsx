import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, createApi } from './api.js';
import { ApprovalPage, ApprovalsPage } from './approvals-page.js';
import {
  completeSignIn,
  type OidcSettings,
  type OidcToken,
  providerSignOut,
  type SignInSettings,
  signInSettings,
  startSignIn,
} from './oidc.js';
import './console.css';
import { RunPage } from './run-page.js';
import { RunsPage } from './runs-page.js';
import { SchedulePage, SchedulesPage } from './schedules-page.js';
import { atLeast, type Me, type Session, SessionContext } from './ui.js';
import { UsagePage } from './usage-page.js';
import { VersionsPage } from './versions-page.js';

const KEY = 'rein.consoleKey';

/** The route is the hash (`#/runs/<id>`): the server serves one page, links work, back works. */
function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, '') || 'runs').split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function SignIn({ onSession, oidc, notice }: { onSession: (s: Session, key: string) => void; oidc?: OidcSettings; notice?: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(notice ?? '');
  const submit = async (e: Event) => {
    e.preventDefault();
    setError('');
    try {
      onSession(await open(key.trim()), key.trim());
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'That key is not valid.' : `Could not sign in: ${(err as Error).message}`);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1>Rein console</h1>
      {oidc ? (
        <div class="card">
          <button type="button" id="company-sign-in" onClick={() => void startSignIn(oidc).catch((err: Error) => setError(err.message))}>
            Sign in with your company account
          </button>
          <p class="muted">Your session lasts as long as the provider's token, in this tab's memory only.</p>
        </div>
      ) : null}
      <form onSubmit={submit} class="card">
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
        <button type="submit">Sign in</button>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <p class="muted">The key stays in this tab (session storage); what you see follows its tenant and role.</p>
      </form>
    </main>
  );
}

async function open(key: string): Promise<Session> {
  const api = createApi(key);
  const me: Me = await api.client.me();
  const settings = await api.raw<{ traceUrlTemplate?: string }>('GET', '/v1/console').catch(() => ({}) as { traceUrlTemplate?: string });
  return { api, me, ...(settings.traceUrlTemplate ? { traceUrlTemplate: settings.traceUrlTemplate } : {}) };
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(true);
  const [settings, setSettings] = useState<SignInSettings>({ methods: ['key'] });
  // The company token lives here, in memory: a reload or a closed tab signs out.
  const [company, setCompany] = useState<OidcToken>();
  const [notice, setNotice] = useState<string>();
  const route = useRoute();
  useEffect(() => {
    (async () => {
      const s = await signInSettings().catch(() => ({ methods: ['key'] }) as SignInSettings);
      setSettings(s);
      if (s.oidc) {
        const token = await completeSignIn(s.oidc).catch((err: Error) => {
          setNotice(err.message);
          return undefined;
        });
        if (token) {
          setCompany(token);
          setSession(await open(token.token));
          return;
        }
      }
      const key = sessionStorage.getItem(KEY);
      if (key) await open(key).then(setSession, () => sessionStorage.removeItem(KEY));
    })()
      .catch((err: Error) => setNotice(`Could not sign in: ${err.message}`))
      .finally(() => setRestoring(false));
  }, []);
  // A company session ends when its token does: back to the sign-in page, saying why.
  useEffect(() => {
    if (!company) return;
    const timer = setTimeout(
      () => {
        setCompany(undefined);
        setSession(null);
        setNotice('Your session expired; sign in again.');
      },
      Math.max(0, company.expiresAt - Date.now()),
    );
    return () => clearTimeout(timer);
  }, [company]);
  if (restoring) return <p class="muted">Signing in…</p>;
  if (!session)
    return (
      <SignIn
        {...(settings.oidc ? { oidc: settings.oidc } : {})}
        {...(notice ? { notice } : {})}
        onSession={(s, key) => {
          sessionStorage.setItem(KEY, key);
          setSession(s);
        }}
      />
    );
  const { me } = session;
  const [page, id] = route;
  const nav = [
    ['runs', 'Runs'],
    ['approvals', 'Approvals'],
    ['schedules', 'Schedules'],
    ...(atLeast(me, 'approver') ? [['usage', 'Usage']] : []),
    ...(me.roles.includes('admin') || me.roles.includes('operator') ? [['versions', 'Versions']] : []),
  ];
  return (
    <SessionContext.Provider value={session}>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>{' '}
      <header class="top">
        <strong class="brand">Rein</strong>
        <nav aria-label="Console">
          {nav.map(([path, label]) => (
            <a key={path} href={`#/${path}`} aria-current={page === path ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span id="who" class="who">
          Signed in as {me.userId} ({me.roles.join(', ')}) · tenant {me.tenantId}
        </span>
        <button
          type="button"
          class="link"
          onClick={() => {
            sessionStorage.removeItem(KEY);
            if (company && settings.oidc?.endSessionEndpoint) return providerSignOut(settings.oidc, company.idToken);
            location.hash = '';
            location.reload();
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {page === 'runs' && id ? (
          <RunPage key={id} id={id} />
        ) : page === 'approvals' && id ? (
          <ApprovalPage key={id} id={id} />
        ) : page === 'approvals' ? (
          <ApprovalsPage />
        ) : page === 'schedules' && id ? (
          <SchedulePage key={id} id={id} />
        ) : page === 'schedules' ? (
          <SchedulesPage />
        ) : page === 'usage' ? (
          <UsagePage />
        ) : page === 'versions' ? (
          <VersionsPage />
        ) : (
          <RunsPage />
        )}
      </main>
    </SessionContext.Provider>
  );
}

/** `?approval=<id>`, the link approval webhooks carry (REIN_CONSOLE_URL), is that approval's route. */
const linked = new URLSearchParams(location.search).get('approval');
if (linked && !location.hash) history.replaceState(null, '', `${location.pathname}#/approvals/${encodeURIComponent(linked)}`);

render(<App />, document.getElementById('app') as HTMLElement);
