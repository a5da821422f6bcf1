import { DEFAULT_PROVIDER, type Provider, parseModelId } from '../../shared/provider-config.js';
import { type CompleteWith, createOpenAICompletion } from './model-gateway.js';

/**
 * One chat completion per model id, sent to the id's provider with the provider's own
 * model name; the reply names the id that answered, so the trace says which provider
 * and model made each decision.
 */
export function createProviderCompletion(
  providers: Record<string, Provider>,
  defaultProvider: { baseURL: string; apiKey: string },
): CompleteWith {
  const clients = new Map<string, CompleteWith>([[DEFAULT_PROVIDER, createOpenAICompletion(defaultProvider)]]);
  for (const [name, p] of Object.entries(providers)) {
    // Endpoints without keys (a local vLLM or Ollama) still need a non-empty one for the SDK.
    clients.set(name, createOpenAICompletion({ baseURL: p.baseURL, apiKey: p.apiKey ?? 'not-needed' }));
  }
  return async (id, request) => {
    const { provider, model } = parseModelId(id, providers);
    // What an endpoint cannot honour is left out: the answer is validated anyway, and arrives whole instead of streamed.
    const p = providers[provider];
    const { responseFormat, onDelta, ...plain } = request;
    const sent = {
      ...plain,
      ...(responseFormat && p?.supportsJsonSchema !== false ? { responseFormat } : {}),
      ...(onDelta && p?.supportsStreaming !== false ? { onDelta } : {}),
    };
    const reply = await clients.get(provider)!(model, sent);
    return { ...reply, model: id };
  };
}
