// One app in several versions, for the version tests (REIN_APP): VERSIONED_APP picks the
// flavour. v1 and v2 differ in a prompt and a read tool's result, not in the gated write
// (an upgrade keeps its approval); v3 gives the write's arguments a new field (an upgrade
// withdraws its approval); v4 renames it. The write's result names the version that ran it,
// and the write records its effect once per idempotency key, with that version (EFFECTS_KEY).
import { defineAgent, defineApp, defineTool } from '@rein/core';
import { z } from 'zod';

/** The hash of effects: idempotency key → the version that carried the write out. */
export const EFFECTS_KEY = 'versioned-app:effects';

const flavour = process.env.VERSIONED_APP ?? 'v1';
const writeName = flavour === 'v4' ? 'apply_change_v4' : 'apply_change';
const writeParams = flavour === 'v3' ? z.object({ target: z.string(), note: z.string().optional() }) : z.object({ target: z.string() });

export default defineApp({
  agents: [
    defineAgent({
      name: 'deployer',
      instructions: `You look the target up, then apply the change (prompt of ${flavour === 'v1' ? 'v1' : 'v2 and later'}).`,
      tools: ['lookup', writeName],
    }),
  ],
  tools: ({ redis }) => [
    defineTool({
      name: 'lookup',
      description: 'Looks the target up.',
      kind: 'read',
      parameters: z.object({ target: z.string() }),
      execute: async ({ target }) => `${target} looked up by ${flavour}`,
    }),
    defineTool({
      name: writeName,
      description: 'Applies the change to the target.',
      kind: 'write',
      parameters: writeParams,
      approval: ({ target }) => ({ risk: 'high', summary: `apply the change to ${target}` }),
      execute: async ({ target }, ctx) => {
        // De-duplicated by the key, as a write tool does: a repeat of one call changes nothing.
        await redis.hsetnx(EFFECTS_KEY, ctx.idempotencyKey, flavour);
        return `change to ${target} applied by ${flavour}`;
      },
    }),
  ],
});
