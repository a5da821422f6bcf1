import { ConfigError, defineAgent, defineApp, defineTool } from '@rein/define';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('@rein/define', () => {
  it('defines an app without the server: tools, agents and the checks between them', () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look a name up.',
      kind: 'read',
      parameters: z.object({ name: z.string() }),
      execute: ({ name }) => ({ name }),
    });
    const app = defineApp({ agents: [defineAgent({ name: 'helper', instructions: 'Help.', tools: ['lookup'] })], tools: [lookup] });
    expect(app).toMatchObject({ kind: 'rein-app', defaultAgent: 'helper', tools: [lookup] });
    expect(() => defineApp({ agents: [defineAgent({ name: 'lost', instructions: 'x', tools: ['missing'] })], tools: [lookup] })).toThrow(
      ConfigError,
    );
  });
});
