/** Model providers as the environment declares them (REIN_PROVIDERS): pure schema and naming, read by config and by the model adapter. */
import { z } from 'zod';
import { ConfigError } from './errors.js';

/** The provider OPENAI_BASE_URL and OPENAI_API_KEY describe; bare model names belong to it. */
export const DEFAULT_PROVIDER = 'openai';

/** One OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM, llama.cpp, a hosted provider's compatible API). */
const providerFields = z
  .object({
    baseURL: z.string().url(),
    /** The variable holding the key (kept out of the JSON, so the setting itself is no secret). */
    apiKeyEnv: z.string().min(1).optional(),
    apiKey: z.string().min(1).optional(),
    /** Whether the endpoint honours `response_format: {type: 'json_schema'}`; without it the output is still validated. */
    supportsJsonSchema: z.boolean().default(true),
    /** Whether the endpoint streams (`stream: true`); without it the reply arrives whole. */
    supportsStreaming: z.boolean().default(true),
  })
  .strict();
export const providerSchema = providerFields.refine((p) => !(p.apiKey && p.apiKeyEnv), { message: 'give apiKey or apiKeyEnv, not both' });
export type Provider = z.infer<typeof providerSchema>;

/** Provider names become the first segment of model ids and of dependency names (`model:<provider>/<model>`). */
const providerName = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _');
export const providersSchema = z.record(providerName, providerSchema);
/** Providers once their keys are resolved (`apiKey` filled from `apiKeyEnv`): what compiled options hold. */
export const resolvedProvidersSchema = z.record(providerName, providerFields);

/**
 * A model id is `<provider>/<model>` when its first segment names a configured provider,
 * and otherwise a model of the default provider (so `meta-llama/Llama-3` still reaches
 * OPENAI_BASE_URL). The id as written is the model's name everywhere: breakers,
 * bulkheads, fleet limits, prices, metrics, the trace and the decision snapshot.
 */
export function parseModelId(id: string, providers: Readonly<Record<string, unknown>>): { provider: string; model: string } {
  const slash = id.indexOf('/');
  const head = slash > 0 ? id.slice(0, slash) : '';
  if (head && (Object.hasOwn(providers, head) || head === DEFAULT_PROVIDER)) return { provider: head, model: id.slice(slash + 1) };
  return { provider: DEFAULT_PROVIDER, model: id };
}

/** Fills `apiKey` from `apiKeyEnv`; the entry point's environment is the only place keys come from. */
export function resolveProviderKeys(providers: Record<string, Provider>, env: NodeJS.ProcessEnv): Record<string, Provider> {
  return Object.fromEntries(
    Object.entries(providers).map(([name, p]) => {
      if (!p.apiKeyEnv) return [name, p];
      const apiKey = env[p.apiKeyEnv];
      if (!apiKey) throw new ConfigError(`invalid environment:\n  REIN_PROVIDERS.${name}.apiKeyEnv: ${p.apiKeyEnv} is not set`);
      return [name, { ...p, apiKey }];
    }),
  );
}
