import { z } from 'zod';
import { type ExplicitScript, loadScript } from './explicit-script.js';
import { createScriptedModelServer, SCRIPTED_MODEL_ID } from './server.js';

const env = z
  .object({
    SCRIPTED_MODEL_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
    SCRIPTED_MODEL_HOST: z.string().default('127.0.0.1'),
    SCRIPTED_MODEL_LATENCY_MS: z.coerce.number().int().min(0).default(0),
    /** Pause between the chunks of a streamed reply. */
    SCRIPTED_MODEL_CHUNK_DELAY_MS: z.coerce.number().int().min(0).default(0),
    /** Serve POST /_faults (fault injection for tests and the chaos suite). */
    SCRIPTED_MODEL_FAULTS: z.enum(['on', 'off']).default('off'),
    /** A JSON file of turns to play instead of the rules (see the package README). */
    SCRIPTED_MODEL_SCRIPT: z.string().min(1).optional(),
  })
  .safeParse(process.env);
if (!env.success) {
  process.stderr.write(
    `scripted-model: invalid environment: ${env.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}\n`,
  );
  process.exit(1);
}

let script: ExplicitScript | undefined;
try {
  script = env.data.SCRIPTED_MODEL_SCRIPT ? loadScript(env.data.SCRIPTED_MODEL_SCRIPT) : undefined;
} catch (err) {
  process.stderr.write(`scripted-model: ${(err as Error).message}\n`);
  process.exit(1);
}

const app = createScriptedModelServer({
  script,
  latencyMs: env.data.SCRIPTED_MODEL_LATENCY_MS,
  chunkDelayMs: env.data.SCRIPTED_MODEL_CHUNK_DELAY_MS,
  faultControl: env.data.SCRIPTED_MODEL_FAULTS === 'on',
});
const address = await app.listen({ port: env.data.SCRIPTED_MODEL_PORT, host: env.data.SCRIPTED_MODEL_HOST });
process.stdout.write(`scripted model "${SCRIPTED_MODEL_ID}" (rules, not an LLM) listening on ${address}/v1\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void app.close().then(() => process.exit(0)));
