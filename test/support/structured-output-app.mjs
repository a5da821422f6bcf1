// An app whose agent declares an `output` schema, for the structured-output tests.
import { defineAgent, defineApp } from '@rein/core';
import { z } from 'zod';

export default defineApp({
  agents: [
    defineAgent({
      name: 'classifier',
      instructions: 'Classify the request. Answer only with JSON.',
      tools: [],
      output: z.object({ summary: z.string().min(1), category: z.enum(['question', 'complaint']), confidence: z.number().min(0).max(1) }),
    }),
  ],
  tools: [],
});
