import { isIP } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Agent, fetch as undiciFetch } from 'undici';
import { ReinError } from '../../shared/errors.js';
import { AddressRefusedError, isRefusedAddress, publicOnlyLookup } from '../net/address-guard.js';

/** How Rein reaches one remote A2A agent an app declares. */
export interface RemoteAgentAddress {
  /** The agent's base URL (its card under `/.well-known/agent-card.json`) or the card's own URL. */
  url: string;
  /** Its credentials: sent with every request, and only to the origin of `url`. */
  headers?: Record<string, string> | undefined;
}

export interface RemoteAgentClientOptions {
  /** REIN_REMOTE_AGENT_ALLOW_PRIVATE: private addresses may be called (an agent in the same cluster). */
  allowPrivate: boolean;
  /** The largest answer read from the agent (a card, a task with its artifacts). */
  maxResponseBytes?: number;
  /** The longest a request that brings no deadline of its own (a card read) may take. */
  requestTimeoutMs?: number;
  /** How long a card read is trusted before it is read again. */
  cardTtlMs?: number;
  now?: () => number;
}

/** A request the remote agent's address rules refuse: another origin than the declared one, or a refused address. */
export class RemoteAgentRefusedError extends ReinError {
  override readonly name = 'RemoteAgentRefusedError';
  constructor(message: string) {
    super('remote_agent_refused', message);
  }
}

/** A request that never reached the remote agent (no connection could be made): nothing happened there. */
export class RemoteAgentUnreachableError extends ReinError {
  override readonly name = 'RemoteAgentUnreachableError';
  constructor(origin: string, cause: unknown) {
    super('remote_agent_unreachable', `the remote agent at ${origin} cannot be reached`, { retryable: true, cause });
  }
}

/** An answer larger than Rein reads: the request was carried out, its answer is not read. */
export class RemoteAgentAnswerTooLargeError extends ReinError {
  override readonly name = 'RemoteAgentAnswerTooLargeError';
  constructor(max: number) {
    super('remote_agent_answer_too_large', `the remote agent's answer is larger than ${max} bytes`);
  }
}

/**
 * The agent's HTTP server turned the request away with a 4xx and no JSON-RPC answer (bad
 * credentials at a proxy, too many requests): nothing was carried out.
 */
export class RemoteAgentRejectedError extends ReinError {
  override readonly name = 'RemoteAgentRejectedError';
  constructor(origin: string, status: number) {
    super('remote_agent_rejected', `the remote agent at ${origin} turned the request away (HTTP ${status})`, {
      retryable: status === 408 || status === 429,
    });
  }
}

/**
 * Whether the agent did not act on a request: it never left (refused by the address rules,
 * no connection) or was turned away before the agent read it.
 */
export const notCarriedOut = (err: unknown): boolean =>
  err instanceof RemoteAgentRefusedError ||
  err instanceof AddressRefusedError ||
  err instanceof RemoteAgentUnreachableError ||
  err instanceof RemoteAgentRejectedError;

/** Whether a body is a JSON-RPC error (the agent's own answer, which the SDK reads). */
const isJsonRpcError = (body: Uint8Array): boolean => {
  try {
    const parsed = JSON.parse(Buffer.from(body).toString('utf8')) as { jsonrpc?: unknown; error?: unknown } | null;
    return Boolean(parsed?.jsonrpc && parsed.error);
  } catch {
    return false;
  }
};

/** Connection failures (undici's cause codes): the request never left. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** Relative: the card lives under the agent's own path (`<url>/.well-known/agent-card.json`), not at the host's root. */
const CARD_PATH = '.well-known/agent-card.json';

/** Reads a body up to `max` bytes; a larger one is refused rather than buffered. */
async function limitedBody(res: Awaited<ReturnType<typeof undiciFetch>>, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > max) {
      await res.body?.cancel().catch(() => {});
      throw new RemoteAgentAnswerTooLargeError(max);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The fetch every request to one remote agent goes through: only to the declared origin
 * (a card cannot point Rein, with the agent's credentials, anywhere else), through the
 * address guard (the address checked is the one connected to), no redirects, and an
 * answer of bounded size. Undici rather than the global fetch: it takes the guard's lookup.
 */
export function guardedFetch(address: RemoteAgentAddress, opts: RemoteAgentClientOptions): typeof fetch {
  const origin = new URL(address.url).origin;
  const dispatcher = new Agent(opts.allowPrivate ? {} : { connect: { lookup: publicOnlyLookup } });
  const max = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    if (url.origin !== origin) throw new RemoteAgentRefusedError(`the remote agent at ${origin} pointed to another origin (${url.origin})`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!opts.allowPrivate && isIP(host) && isRefusedAddress(host)) throw new AddressRefusedError(host, 'remote_agent_refused');
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(address.headers ?? {})) headers.set(name, value);
    const res = await undiciFetch(url, {
      method: init?.method ?? 'GET',
      headers: [...headers.entries()],
      ...(init?.body !== undefined && init.body !== null ? { body: init.body as string } : {}),
      // The SDK reads the card with no deadline: a card that never comes must not hold a worker's start or a run's end.
      signal: init?.signal ?? AbortSignal.timeout(opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
      redirect: 'error',
      dispatcher,
    }).catch((err: Error) => {
      const cause = err.cause as { code?: string } | undefined;
      if (cause instanceof AddressRefusedError) throw new AddressRefusedError(url.hostname, 'remote_agent_refused');
      if (NOT_CONNECTED.has(cause?.code ?? '')) throw new RemoteAgentUnreachableError(origin, err);
      throw err;
    });
    const body = await limitedBody(res, max);
    if (res.status >= 400 && res.status < 500 && !isJsonRpcError(body)) throw new RemoteAgentRejectedError(origin, res.status);
    return new Response(res.status === 204 || res.status === 304 ? null : body, {
      status: res.status,
      statusText: res.statusText,
      headers: [...res.headers.entries()],
    });
  };
  return guarded as typeof fetch;
}

/** Where the card is: the URL itself when it names a JSON file, else the well-known path under it. */
export function cardLocation(url: string): { base: string; path: string } {
  return new URL(url).pathname.endsWith('.json') ? { base: url, path: '' } : { base: url.endsWith('/') ? url : `${url}/`, path: CARD_PATH };
}

/**
 * A remote A2A agent through the official SDK's client, built from its card (JSON-RPC, and
 * v0.3 agents through the SDK's compatibility layer). The card is read again once it is
 * older than `cardTtlMs`, so a call uses what the agent serves now.
 */
export class RemoteAgentClient {
  private cached?: { client: Client; card: AgentCard; at: number };
  private readonly factory: ClientFactory;
  private readonly now: () => number;

  constructor(
    private readonly address: RemoteAgentAddress,
    private readonly opts: RemoteAgentClientOptions,
  ) {
    const fetchImpl = guardedFetch(address, opts);
    this.now = opts.now ?? Date.now;
    this.factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
      }),
    );
  }

  /** The SDK client, its card read now unless read within the TTL. */
  async client(): Promise<Client> {
    return (await this.connect()).client;
  }

  /** The card as last read (read now if never, or too long ago). */
  async card(): Promise<AgentCard> {
    return (await this.connect()).card;
  }

  private async connect() {
    const ttl = this.opts.cardTtlMs ?? 60_000;
    if (this.cached && this.now() - this.cached.at < ttl) return this.cached;
    const { base, path } = cardLocation(this.address.url);
    const client = await this.factory.createFromUrl(base, path);
    this.cached = { client, card: await client.getAgentCard(), at: this.now() };
    return this.cached;
  }
}
