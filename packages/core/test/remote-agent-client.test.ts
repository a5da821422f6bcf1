import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineAgent, defineApp, defineTool } from '@rein/define';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cardLocation, guardedFetch, RemoteAgentClient } from '../src/adapters/a2a/remote-agent-client.js';

/** A local server standing for a remote agent that misbehaves in the ways an adversary would. */
let server: Server;
let base: string;
const seen: Array<{ url: string; authorization: string | undefined }> = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    if (req.url === '/huge') return res.end('x'.repeat(2_000));
    if (req.url?.startsWith('/silent/')) return; // never answers
    if (req.url === '/redirect') return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
    if (req.url === '/elsewhere/.well-known/agent-card.json') {
      // A card that points the client, with the agent's credentials, at another origin.
      const card = {
        name: 'elsewhere',
        description: '',
        supportedInterfaces: [{ url: 'http://127.0.0.2:9/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        version: '1',
        capabilities: {},
        defaultInputModes: [],
        defaultOutputModes: [],
        skills: [],
      };
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
    }
    res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('the remote agent fetch (what a card or an answer cannot make Rein do)', () => {
  const allowed = (url = base) =>
    guardedFetch({ url, headers: { authorization: 'Bearer secret' } }, { allowPrivate: true, maxResponseBytes: 1_000 });

  it('sends the declared credentials, to the declared origin only', async () => {
    await allowed()(`${base}/ok`);
    expect(seen.at(-1)).toEqual({ url: '/ok', authorization: 'Bearer secret' });
    await expect(allowed()('http://127.0.0.2:9/steal')).rejects.toMatchObject({ code: 'remote_agent_refused' });
  });

  it('refuses a private address unless the operator allows them', async () => {
    const strict = guardedFetch({ url: base }, { allowPrivate: false });
    await expect(strict(`${base}/ok`)).rejects.toMatchObject({ code: 'remote_agent_refused' });
    const named = guardedFetch({ url: base.replace('127.0.0.1', 'localhost') }, { allowPrivate: false });
    // A name resolving to a private address is refused at connect time, by the guard's lookup.
    await expect(named(`${base.replace('127.0.0.1', 'localhost')}/ok`)).rejects.toMatchObject({ code: 'remote_agent_refused' });
  });

  it('follows no redirect and reads no answer past its bound', async () => {
    await expect(allowed()(`${base}/redirect`)).rejects.toThrow();
    await expect(allowed()(`${base}/huge`)).rejects.toMatchObject({ code: 'remote_agent_answer_too_large' });
  });

  it('gives up on a card that never comes (nothing else bounds the SDK’s card read)', async () => {
    const silent = new RemoteAgentClient({ url: `${base}/silent` }, { allowPrivate: true, requestTimeoutMs: 200 });
    await expect(silent.card()).rejects.toThrow();
  });

  it('will not follow a card to another origin', async () => {
    const client = await new RemoteAgentClient({ url: `${base}/elsewhere` }, { allowPrivate: true }).client();
    await expect(client.getTask({ tenant: '', id: 't', historyLength: 0 })).rejects.toMatchObject({ code: 'remote_agent_refused' });
  });

  it('finds the card under a base URL, or at a URL naming it', () => {
    const under = (url: string) => new URL(cardLocation(url).path, cardLocation(url).base).href;
    expect(under('https://a.example/agents/x')).toBe('https://a.example/agents/x/.well-known/agent-card.json');
    expect(under('https://a.example/agents/x/')).toBe('https://a.example/agents/x/.well-known/agent-card.json');
    expect(cardLocation('https://a.example/card.json')).toEqual({ base: 'https://a.example/card.json', path: '' });
  });
});

describe('declaring remote agents', () => {
  const agent = (tools: string[], name = 'front') => defineAgent({ name, instructions: 'x', tools });

  it('makes call_<name> a tool agents may list', () => {
    const app = defineApp({
      agents: [agent(['call_billing'])],
      tools: [],
      remoteAgents: { billing: { url: 'https://billing.example/a2a' }, desk: { url: 'https://desk.example', onInputRequired: 'ask' } },
    });
    expect(Object.keys(app.remoteAgents)).toEqual(['billing', 'desk']);
  });

  it('refuses a name one of the app’s agents has, a bad URL and unknown fields', () => {
    expect(() => defineApp({ agents: [agent([], 'billing')], tools: [], remoteAgents: { billing: { url: 'https://b.example' } } })).toThrow(
      /remote agent "billing" has the name of one of the app's agents/,
    );
    expect(() => defineApp({ agents: [agent([])], tools: [], remoteAgents: { billing: { url: 'ftp://b.example' } } })).toThrow(
      /remoteAgents/,
    );
    expect(() =>
      defineApp({ agents: [agent([])], tools: [], remoteAgents: { billing: { url: 'https://b.example', retries: 3 } as never } }),
    ).toThrow(/remoteAgents/);
    expect(() =>
      defineApp({
        agents: [agent([])],
        tools: [],
        remoteAgents: { billing: { url: 'https://b.example', onInputRequired: 'sometimes' } as never },
      }),
    ).toThrow(/onInputRequired/);
    expect(() => defineApp({ agents: [agent(['call_nobody'])], tools: [] })).toThrow(/names tool "call_nobody"/);
  });

  it('refuses a remote agent whose tool an MCP server’s tools would shadow (call_x__y: server call_x, tool y)', () => {
    const mcp = { call_x: { command: 'x' } };
    expect(() =>
      defineApp({ agents: [agent(['call_x__y'])], tools: [], mcpServers: mcp, remoteAgents: { x__y: { url: 'https://b.example' } } }),
    ).toThrow(/remote agent "x__y"/);
  });

  it('refuses a remote agent as an undo (an undo runs outside the run, with no ledger entry to follow the task by)', () => {
    const pay = defineTool({
      name: 'pay',
      description: 'pay',
      kind: 'write',
      parameters: z.object({}),
      execute: async () => null,
      compensateWith: { tool: 'call_billing', args: () => ({ input: 'refund' }) },
    });
    expect(() => defineApp({ agents: [agent(['pay'])], tools: [pay], remoteAgents: { billing: { url: 'https://b.example' } } })).toThrow(
      /call_billing/,
    );
  });
});
