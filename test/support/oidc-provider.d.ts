// oidc-provider ships no types: the little of it the test issuer uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  type Ctx = { type: string; body: unknown };
  export default class Provider {
    constructor(
      issuer: string,
      configuration: Record<string, unknown> & {
        findAccount?: (ctx: Ctx, sub: string) => Promise<{ accountId: string; claims: () => Promise<Record<string, unknown>> }>;
        extraTokenClaims?: (ctx: Ctx, token: { accountId?: string; clientId?: string }) => Promise<Record<string, unknown> | undefined>;
        renderError?: (ctx: Ctx, out: Record<string, unknown>) => Promise<void>;
      },
    );
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
