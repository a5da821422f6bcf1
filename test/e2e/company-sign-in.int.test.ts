import type { RunView } from '@rein/client';
import { startTestRedis, type TestRedis } from '@rein/core/testing';
import { generateKeyPair, SignJWT } from 'jose';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, startFleet } from '../support/fleet.js';
import { AUDIENCE, startTestIssuer, type TestIssuer } from '../support/oidc-issuer.js';
import { hasSystemBinary } from '../support/system-binary.js';

const CHROMIUM = '/usr/bin/chromium';
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

/**
 * Company sign-in against a real OpenID Provider (`oidc-provider`, started here): the api
 * and the approver take its JWTs with no API key configured at all, read tenant, user and
 * roles from the claims, and refuse every token they must refuse.
 */
describe('company sign-in with a real OpenID Provider', () => {
  let redis: TestRedis;
  let idp: TestIssuer;
  let fleet: Fleet;

  beforeAll(async () => {
    redis = await startTestRedis();
    idp = await startTestIssuer();
    fleet = await startFleet({
      redisUrl: redis.url,
      workers: 1,
      env: {
        REIN_API_KEYS: '',
        REIN_OIDC_ISSUER: idp.issuer,
        REIN_OIDC_AUDIENCE: AUDIENCE,
        REIN_OIDC_ROLE_MAP: JSON.stringify({ 'rein-approvers': 'approver' }),
        REIN_OIDC_CONSOLE_CLIENT_ID: 'rein-console',
        // Every unknown key id may fetch the keys again: the rotation below is seen at once.
        REIN_OIDC_JWKS_COOLDOWN_MS: '0',
        REIN_OIDC_CLOCK_TOLERANCE_S: '5',
      },
    });
    await idp.allowRedirect(`${fleet.approver}/console/`);
  });
  afterAll(async () => {
    await fleet?.stop();
    await idp?.stop();
    await redis?.stop();
  });

  const waitForRun = async (id: string, token: string, done: (r: RunView) => boolean) => {
    for (let i = 0; i < 450; i++) {
      const res = await fleet.callApi('GET', `/v1/runs/${id}`, token);
      if (res.status === 200 && done(res.body as RunView)) return res.body as RunView;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`run ${id} never got there\n${fleet.logs.slice(-20).join('\n')}`);
  };

  it('takes a provider-issued access token as the caller: tenant, user and mapped roles from its claims', async () => {
    const acme = await idp.serviceToken('acme-bot');
    const me = await fleet.callApi('GET', '/v1/me', acme);
    expect(me).toEqual({ status: 200, body: { tenantId: 'acme', userId: 'acme-bot', roles: ['user'] } });
    const globex = await idp.serviceToken('globex-bot');
    expect((await fleet.callApprover('GET', '/v1/me', globex)).body).toEqual({
      tenantId: 'globex',
      userId: 'globex-bot',
      roles: ['approver'],
    });
  });

  it('fires the schedule of a person who has no key, as them, while they keep signing in', async () => {
    const acme = await idp.serviceToken('acme-bot');
    const created = await fleet.callApi('POST', '/v1/schedules', acme, {
      input: '支持 7 天无理由退货吗？',
      cron: '*/2 * * * * *',
      overlap: 'allow',
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    let detail: { history: { outcome: string; reason?: string }[]; runs: unknown[] } = { history: [], runs: [] };
    for (let i = 0; i < 150 && !detail.history.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      detail = (await fleet.callApi('GET', `/v1/schedules/${id}`, acme)).body;
    }
    expect((await fleet.callApi('DELETE', `/v1/schedules/${id}`, acme)).status).toBe(204);
    // Without a key of its owner, a firing was paused (or failed unverifiable) before sign-ins counted.
    expect(detail.history[0]).toMatchObject({ outcome: 'started' });
    const run = detail.runs[0] as { id: string; metadata: Record<string, unknown> };
    expect(run.metadata).toMatchObject({ scheduleId: id });
    // It ran as its owner: a user sees only their own runs.
    expect((await fleet.callApi('GET', `/v1/runs/${run.id}`, acme)).status).toBe(200);
  });

  it('keeps tenants apart: a token of another tenant sees and decides nothing of this one', async () => {
    const acme = await idp.serviceToken('acme-bot');
    const globex = await idp.serviceToken('globex-bot');
    const submitted = await fleet.callApi('POST', '/v1/runs', acme, { input: '客户张三投诉订单 2024001 一直没发货，帮他处理一下' });
    expect(submitted.status).toBe(202);
    const run = await waitForRun(submitted.body.id, acme, (r) => r.status === 'pending_approval');
    const approvalId = run.pendingApprovals[0]?.id as string;
    expect((await fleet.callApi('GET', `/v1/runs/${run.id}`, globex)).status).toBe(404);
    expect((await fleet.callApprover('GET', `/v1/approvals/${approvalId}`, globex)).status).toBe(404);
    const denied = await fleet.callApprover('POST', '/v1/approvals/decide', globex, { ids: [approvalId], verdict: 'approve' });
    expect(denied.body.results[0]).toMatchObject({ id: approvalId, ok: false, error: { code: 'not_found' } });
    // The same person's token with its tenant claim rewritten (signature kept) is refused, not read as acme.
    const [h, p, s] = globex.split('.');
    const forged = `${h}.${b64({ ...JSON.parse(Buffer.from(p as string, 'base64url').toString()), tenant: 'acme' })}.${s}`;
    expect((await fleet.callApprover('GET', `/v1/approvals/${approvalId}`, forged)).status).toBe(401);
    // Its own tenant's requester approves it as proposed (a high-risk write of their own).
    const decided = await fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, acme, {});
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    expect(decided.body).toMatchObject({ status: 'approved', decidedBy: 'acme-bot' });
  });

  it('decides an approval once when a batch races a single decision, each recorded on its own', async () => {
    const acme = await idp.serviceToken('acme-bot');
    const approver = await idp.mint({ sub: 'li.na', tenant: 'acme', roles: ['rein-approvers'] });
    const submitted = await fleet.callApi('POST', '/v1/runs', acme, { input: '客户张三投诉订单 2024001 一直没发货，帮他处理一下' });
    const run = await waitForRun(submitted.body.id, acme, (r) => r.status === 'pending_approval');
    const approvalId = run.pendingApprovals[0]?.id as string;
    const [batch, single] = await Promise.all([
      fleet.callApprover('POST', '/v1/approvals/decide', approver, { ids: [approvalId], verdict: 'reject', comment: 'no' }),
      fleet.callApprover('POST', `/v1/approvals/${approvalId}/approve`, approver, {}),
    ]);
    const wins = [batch.body.results[0].ok === true, single.status === 200].filter(Boolean);
    expect(wins, JSON.stringify({ batch: batch.body, single: single.body })).toHaveLength(1);
    if (single.status !== 200) expect(single.body.error.code).toBe('approval_decided');
    else expect(batch.body.results[0].error.code).toBe('approval_decided');
    const audit = await fleet.callApi('GET', '/v1/audit?limit=1000', await idp.mint({ sub: 'boss', tenant: 'acme', roles: ['admin'] }));
    const entries = JSON.stringify(audit.body).split(approvalId).length - 1;
    expect(entries).toBeGreaterThanOrEqual(1);
  });

  it('refuses with 401 tokens that are expired, for another audience or issuer, unsigned, tampered or HMAC-signed with the public key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const person = { sub: 'li.na', tenant: 'acme', roles: ['rein-approvers'] };
    const good = await idp.mint(person);
    expect((await fleet.callApi('GET', '/v1/me', good)).body).toEqual({ tenantId: 'acme', userId: 'li.na', roles: ['approver'] });

    const refused = async (token: string, why: string) => {
      const res = await fleet.callApi('GET', '/v1/me', token);
      expect(res.status, why).toBe(401);
      expect(res.body.error.code, why).toBe('unauthorized');
      expect(JSON.stringify(res.body), why).not.toContain(token);
    };
    await refused(await idp.mint({ ...person, iat: now - 4000, exp: now - 3600 }), 'expired');
    await refused(await idp.mint({ ...person, aud: 'https://someone-else.test' }), 'wrong audience');
    await refused(await idp.mint({ ...person, iss: 'http://127.0.0.1:1' }), 'wrong issuer');
    await refused(await idp.mint({ ...person, exp: undefined }), 'no expiry');
    const [, payload] = good.split('.');
    await refused(`${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`, 'alg none, empty signature');
    await refused(`${b64({ alg: 'none', typ: 'JWT' })}.${payload}.c2ln`, 'alg none with a signature part');
    const [h, , s] = good.split('.');
    await refused(
      `${h}.${b64({ ...person, roles: ['admin'], iss: idp.issuer, aud: AUDIENCE, iat: now, exp: now + 300 })}.${s}`,
      'tampered roles',
    );
    // Algorithm confusion: the provider's public key (as published) used as an HMAC secret.
    const jwks = (await (await fetch(`${idp.issuer}/jwks`)).json()) as { keys: Array<{ kid: string }> };
    const publicKey = jwks.keys[0] as { kid: string };
    const hmac = await new SignJWT({ ...person, roles: ['admin'] })
      .setProtectedHeader({ alg: 'HS256', kid: publicKey.kid })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JSON.stringify(publicKey)));
    await refused(hmac, 'HS256 with the public key as secret');
    // A key the provider never published, with the provider's key id.
    const stranger = (await generateKeyPair('ES256')).privateKey;
    const foreign = await new SignJWT(person)
      .setProtectedHeader({ alg: 'ES256', kid: publicKey.kid })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(stranger);
    await refused(foreign, 'signed by a key the provider does not hold');
    await refused('not.a.jwt', 'garbage');
  });

  it('refuses claims of the wrong type instead of reading part of them, and a token granting no Rein role is a 403', async () => {
    const claims = { sub: 'li.na', tenant: 'acme' };
    const status = async (extra: Record<string, unknown>) =>
      (await fleet.callApi('GET', '/v1/me', await idp.mint({ ...claims, ...extra }))).status;
    expect(await status({ roles: { admin: true } }), 'roles as an object').toBe(401);
    expect(await status({ roles: [['admin']] }), 'roles nested').toBe(401);
    expect(await status({ roles: ['user', 7] }), 'a role that is no string').toBe(401);
    expect(await status({ roles: ['user'], tenant: ['acme', 'globex'] }), 'two tenants').toBe(401);
    expect(await status({ roles: ['user'], tenant: { id: 'acme' } }), 'tenant as an object').toBe(401);
    expect(await status({ roles: ['user'], sub: 42 }), 'a numeric user').toBe(401);
    expect(await status({ roles: ['billing', 'sales'] }), 'no Rein role').toBe(403);
    expect(await status({ roles: 'user approver' }), 'space-separated roles (a valid claim)').toBe(200);
    expect(await status({ roles: ['__proto__', 'constructor'] }), 'names of Object.prototype').toBe(403);
  });

  it('follows a key rotation: a token signed with the new key is taken, one signed with the retired key is not', async () => {
    const before = await idp.mint({ sub: 'li.na', tenant: 'acme', roles: ['user'] });
    expect((await fleet.callApi('GET', '/v1/me', before)).status).toBe(200);
    await idp.rotate();
    const after = await idp.serviceToken('acme-bot');
    expect((await fleet.callApi('GET', '/v1/me', after)).status).toBe(200);
    expect((await fleet.callApi('GET', '/v1/me', before)).status).toBe(401);
  });

  // Needs Debian's chromium (.ci/run installs it); never downloads a browser.
  describe.skipIf(!hasSystemBinary(CHROMIUM, 'chromium', 'the console sign-in in a browser'))('the console', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      });
    });
    afterAll(async () => browser?.close());

    it('signs in through the provider (code flow with PKCE), keeps the token out of storage, and works an inbox of identical proposals in bulk', async () => {
      const acme = await idp.serviceToken('acme-bot');
      const input = 'Customer complains order 2024001 has not shipped, please handle it';
      const runs = await Promise.all([1, 2, 3].map(() => fleet.callApi('POST', '/v1/runs', acme, { input })));
      const parked = await Promise.all(runs.map((r) => waitForRun(r.body.id, acme, (run) => run.status === 'pending_approval')));
      const ids = parked.map((r) => r.pendingApprovals[0]?.id as string);

      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
      });
      await page.goto(`${fleet.approver}/console#/approvals`);
      await page.locator('#company-sign-in').click();
      // The provider's own login and consent pages.
      await page.waitForURL((url) => url.origin === idp.issuer);
      await page.locator('input[name="login"]').fill('li.na');
      await page.locator('input[name="password"]').fill('anything');
      await page.locator('button[type="submit"]').click();
      await page.locator('button.login-submit').click();
      await page.locator('#who').waitFor();
      expect(await page.locator('#who').textContent()).toContain('li.na (approver) · tenant acme');
      // Back where the sign-in started, with the code gone from the address bar.
      expect(page.url()).toBe(`${fleet.approver}/console/#/approvals`);
      // A string: the page's globals are not this file's.
      const stored = (await page.evaluate(
        'JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie',
      )) as string;
      expect(stored).not.toMatch(/eyJ/);

      // The three identical proposals are one row with a count, and the app's fields show.
      const row = page.locator('#pending tr', { hasText: '2024001' }).first();
      await row.waitFor();
      expect(await row.getAttribute('data-count')).toBe('3');
      expect(await row.textContent()).toContain('order: 2024001');
      // The context of one of them: what was asked, from the run.
      await page.goto(`${fleet.approver}/console/#/approvals/${encodeURIComponent(ids[0] as string)}`);
      await page.locator('#context-input').waitFor();
      expect(await page.locator('#context-input').textContent()).toBe(input);
      await page.goto(`${fleet.approver}/console/#/approvals`);
      await row.waitFor();
      // Keyboard: focus the row, select it, approve — three decisions through the batch route.
      await row.focus();
      await page.keyboard.press('x');
      expect(await page.locator('#selection').textContent()).toBe('3 selected');
      await page.keyboard.press('a');
      await page.locator('#bulk-result', { hasText: 'Approved 3 of 3' }).waitFor();
      for (const id of ids) {
        const a = await fleet.callApprover(
          'GET',
          `/v1/approvals/${id}`,
          await idp.mint({ sub: 'li.na', tenant: 'acme', roles: ['rein-approvers'] }),
        );
        expect(a.body).toMatchObject({ status: 'approved', decidedBy: 'li.na' });
      }
      // Each is its own entry in the tenant's decision log.
      const audit = await fleet.callApi('GET', '/v1/audit?limit=100', await idp.mint({ sub: 'boss', tenant: 'acme', roles: ['admin'] }));
      expect(audit.status, JSON.stringify(audit.body)).toBe(200);
      const decided = JSON.stringify(audit.body);
      for (const id of ids) expect(decided).toContain(id);
      expect(problems).toEqual([]);
      await page.close();
    });

    it('refuses a sign-in answer it did not ask for (an injected or replayed code)', async () => {
      const page = await browser.newPage();
      await page.goto(`${fleet.approver}/console/?code=stolen-code&state=made-up#/approvals`);
      await page.locator('[role="alert"]', { hasText: 'not asked for here' }).waitFor();
      expect(page.url()).not.toContain('stolen-code');
      expect(await page.locator('#who').count()).toBe(0);
      await page.close();
    });
  });
});
