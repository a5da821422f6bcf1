import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import Provider from 'oidc-provider';

/** The API's audience: what Rein's REIN_OIDC_AUDIENCE names and the provider's access tokens carry. */
export const AUDIENCE = 'https://rein.test/api';

/** People at the provider: Rein reads tenant, user and roles from their claims (roles through a provider name, mapped). */
export const PEOPLE = {
  'li.na': { tenant: 'acme', roles: ['rein-approvers'] },
  'wang.wu': { tenant: 'acme', roles: ['user'] },
  'chen.qi': { tenant: 'globex', roles: ['rein-approvers'] },
} as const;

/** Services at the provider (client credentials): each one's tenant and roles ride in its access tokens. */
export const SERVICES = {
  'acme-bot': { secret: 'acme-bot-secret-0123456789abcdef', tenant: 'acme', sub: 'acme-bot', roles: ['user'] },
  'globex-bot': { secret: 'globex-bot-secret-0123456789abcdef', tenant: 'globex', sub: 'globex-bot', roles: ['rein-approvers'] },
} as const;

export interface TestIssuer {
  issuer: string;
  /** Registers the console's redirect URI (known once the approver listens). */
  allowRedirect(uri: string): Promise<void>;
  /** Signs `claims` with the provider's current key, as if it had minted them (to test what Rein refuses of a valid signature). */
  mint(claims: Record<string, unknown>): Promise<string>;
  /** A fresh access token (a JWT for AUDIENCE) from the token endpoint, as a service gets one. */
  serviceToken(client: keyof typeof SERVICES): Promise<string>;
  /** Replaces the signing key (the old one leaves the JWKS): tokens signed before stop verifying. */
  rotate(): Promise<void>;
  stop(): Promise<void>;
}

async function signingKey(kid: string) {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
}

/**
 * `oidc-provider` (the certified Node implementation) on a loopback port: discovery, JWKS,
 * the authorization code flow with PKCE for the console (its built-in login form takes any
 * account name), client credentials for services; access tokens are ES256 JWTs for AUDIENCE.
 */
export async function startTestIssuer(): Promise<TestIssuer> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let generation = 0;
  let key = await signingKey('key-0');
  let redirect = `${issuer}/nowhere`;
  let provider: Provider;

  const claimsOf = (sub: string): Record<string, unknown> => {
    const person = PEOPLE[sub as keyof typeof PEOPLE];
    if (person) return { tenant: person.tenant, roles: [...person.roles] };
    const service = Object.values(SERVICES).find((s) => s.sub === sub);
    return service ? { tenant: service.tenant, roles: [...service.roles] } : {};
  };

  async function build() {
    const p = new Provider(issuer, {
      clients: [
        {
          client_id: 'rein-console',
          id_token_signed_response_alg: 'ES256',
          token_endpoint_auth_method: 'none',
          redirect_uris: [redirect],
          post_logout_redirect_uris: [redirect],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
        ...Object.entries(SERVICES).map(([id, s]) => ({
          client_id: id,
          id_token_signed_response_alg: 'ES256',
          client_secret: s.secret,
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
        })),
      ],
      jwks: { keys: [key] },
      features: {
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => AUDIENCE,
          useGrantedResource: async () => true,
          getResourceServerInfo: async () => ({
            scope: 'api',
            audience: AUDIENCE,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 300,
            jwt: { sign: { alg: 'ES256' } },
          }),
        },
        rpInitiatedLogout: { enabled: true },
      },
      findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, ...claimsOf(sub) }) }),
      extraTokenClaims: async (_ctx, token) => {
        const sub = token.accountId ?? token.clientId;
        if (!sub) return undefined;
        const claims = claimsOf(sub);
        return token.accountId ? claims : { ...claims, sub };
      },
      claims: { openid: ['sub'], profile: ['tenant', 'roles'] },
      pkce: { required: () => true },
      ttl: { AccessToken: 300, ClientCredentials: 300, IdToken: 300 },
      // The built-in login and consent pages set no CSP of their own; quiet their warning noise.
      renderError: async (ctx, out) => {
        ctx.type = 'json';
        ctx.body = out;
      },
    });
    return p;
  }

  provider = await build();
  server.on('request', (req, res) => provider.callback()(req, res));

  return {
    issuer,
    async serviceToken(client) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client}:${SERVICES[client].secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: AUDIENCE, scope: 'api' }),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || !body.access_token) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async allowRedirect(uri) {
      redirect = uri;
      provider = await build();
    },
    async mint(claims) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, aud: AUDIENCE, iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
        .sign(await importJWK(key, 'ES256'));
    },
    async rotate() {
      generation += 1;
      key = await signingKey(`key-${generation}`);
      provider = await build();
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
