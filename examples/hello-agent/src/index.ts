import { type AppServices, appStateKey, defineAgent, defineApp, defineTool, ToolError } from '@rein/core';
import { z } from 'zod';

const GREETINGS: Record<string, string> = { en: 'Hello', fr: 'Bonjour', de: 'Hallo', es: 'Hola', zh: '你好' };

/** A read tool: no approval, no side effect. */
const findGreeting = defineTool({
  name: 'find_greeting',
  description: 'Find how to greet someone in a language. Call it before sending a greeting.',
  kind: 'read',
  parameters: z.object({
    name: z.string().trim().min(1).max(80).describe('Who to greet'),
    language: z.enum(['en', 'fr', 'de', 'es', 'zh']).describe('Language of the greeting').default('en'),
  }),
  execute: ({ name, language }) => ({ greeting: `${GREETINGS[language]}, ${name}!` }),
});

/**
 * A write tool with an approval: a person says yes before the greeting is "sent" (kept
 * in Redis, once per idempotency key, so a retried step never sends it twice).
 */
const sendGreeting = ({ redis }: AppServices) =>
  defineTool({
    name: 'send_greeting',
    description: 'Send a greeting to someone (write: a person approves it first).',
    kind: 'write',
    parameters: z.object({ name: z.string().trim().min(1).max(80).describe('Who receives the greeting') }),
    approval: ({ name }) => ({ risk: 'high', summary: `Send a greeting to ${name}` }),
    honoursIdempotencyKey: true,
    async execute({ name }, ctx) {
      if (name.toLowerCase() === 'nobody') throw new ToolError('no_recipient', 'there is nobody to greet', { retryable: false });
      const sent = { name, by: ctx.userId, at: new Date().toISOString() };
      await redis.hsetnx(appStateKey('hello-agent', ctx.tenantId, 'sent'), ctx.idempotencyKey, JSON.stringify(sent));
      ctx.logger.info({ name }, 'greeting sent');
      return { sent: true, name };
    },
  });

export const greeter = defineAgent({
  name: 'greeter',
  instructions: 'You greet people. First call find_greeting, then send_greeting for the same person. Answer in one sentence.',
  tools: ['find_greeting', 'send_greeting'],
  limits: { maxSteps: 5 },
});

/** The smallest useful Rein app: one agent, one read tool, one write tool behind an approval. */
export default defineApp({
  agents: [greeter],
  tools: (services) => [findGreeting, sendGreeting(services)],
});
