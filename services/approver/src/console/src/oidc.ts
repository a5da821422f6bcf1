/** Company sign-in as the approver announces it (`GET /console/sign-in`). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  scopes: string;
  token: 'access' | 'id';
  authorizationEndpoint: string;
  tokenEndpoint: string;
  endSessionEndpoint?: string;
}

export interface SignInSettings {
  methods: string[];
  oidc?: OidcSettings;
}

/** A signed-in person's token: kept in memory only (never in storage a script could read later), with its expiry. */
export interface OidcToken {
  token: string;
  idToken?: string;
  expiresAt: number;
}

/** What survives the trip to the provider and back (one use): the PKCE verifier, the state, the nonce, where to return. */
interface Pending {
  state: string;
  verifier: string;
  nonce: string;
  returnTo: string;
}

const PENDING = 'rein.oidc.pending';
/** Only a route of this page: never a URL, so a crafted sign-in cannot send anyone elsewhere afterwards. */
const ROUTE = /^#\/[A-Za-z0-9_\-/%.]*$/;

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => `${location.origin}/console/`;

/** A JWT's claims, unverified: the console only reads `exp` and `nonce`; the API checks signatures. */
function claimsOf(jwt: string): Record<string, unknown> {
  const part = jwt.split('.')[1] ?? '';
  try {
    return JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export async function signInSettings(): Promise<SignInSettings> {
  const res = await fetch('/console/sign-in');
  if (!res.ok) throw new Error(`the sign-in settings could not be read (HTTP ${res.status})`);
  return (await res.json()) as SignInSettings;
}

/** Sends the browser to the provider: authorization code flow with PKCE (S256), state and nonce. */
export async function startSignIn(oidc: OidcSettings): Promise<void> {
  const pending: Pending = {
    state: random(),
    verifier: random(),
    nonce: random(),
    returnTo: ROUTE.test(location.hash) ? location.hash : '',
  };
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier))));
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(oidc.authorizationEndpoint);
  const scopes = new Set(['openid', ...oidc.scopes.split(' ').filter(Boolean)]);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: redirectUri(),
    scope: [...scopes].join(' '),
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/**
 * The provider's answer on this page's URL (`?code&state` or `?error`), redeemed once: the
 * pending sign-in is removed before anything else, so a replayed or injected code finds none;
 * the state must match, the ID token's nonce too. Undefined when the URL carries no answer.
 */
export async function completeSignIn(oidc: OidcSettings): Promise<OidcToken | undefined> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const error = params.get('error');
  if (!code && !error) return undefined;
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  const pending = raw ? (JSON.parse(raw) as Pending) : undefined;
  // The answer leaves the address bar whatever happens next (no code in history or a shared link).
  history.replaceState(null, '', `${location.pathname}${pending?.returnTo ?? ''}`);
  // replaceState fires no hashchange: tell the router the route is back.
  dispatchEvent(new HashChangeEvent('hashchange'));
  if (error) throw new Error(`the provider refused the sign-in: ${error}`);
  if (!pending || params.get('state') !== pending.state) throw new Error('this sign-in answer was not asked for here; sign in again');
  const res = await fetch(oidc.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code as string,
      redirect_uri: redirectUri(),
      client_id: oidc.clientId,
      code_verifier: pending.verifier,
    }),
  });
  const body = (await res.json().catch(() => ({}))) as { access_token?: string; id_token?: string; error?: string };
  if (!res.ok) throw new Error(`the provider did not redeem the sign-in: ${body.error ?? res.status}`);
  if (body.id_token && claimsOf(body.id_token).nonce !== pending.nonce) throw new Error('the ID token was not minted for this sign-in');
  const token = oidc.token === 'id' ? body.id_token : body.access_token;
  if (!token) throw new Error(`the provider sent no ${oidc.token === 'id' ? 'ID' : 'access'} token`);
  const exp = Number(claimsOf(token).exp);
  return {
    token,
    ...(body.id_token ? { idToken: body.id_token } : {}),
    expiresAt: Number.isFinite(exp) ? exp * 1000 : Date.now() + 300_000,
  };
}

/** Ends the session at the provider too, when it offers RP-initiated logout; back to this page after. */
export function providerSignOut(oidc: OidcSettings, idToken?: string): void {
  if (!oidc.endSessionEndpoint) return;
  const url = new URL(oidc.endSessionEndpoint);
  url.search = new URLSearchParams({
    client_id: oidc.clientId,
    post_logout_redirect_uri: redirectUri(),
    ...(idToken ? { id_token_hint: idToken } : {}),
  }).toString();
  location.assign(url.toString());
}
