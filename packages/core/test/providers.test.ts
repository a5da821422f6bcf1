import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/shared/config.js';
import { ConfigError } from '../src/shared/errors.js';
import { parseModelId } from '../src/shared/provider-config.js';

const providers = { local: { baseURL: 'http://127.0.0.1:1/v1' } };

describe('model ids and providers', () => {
  it('sends <provider>/<model> to the named provider and anything else to the default one', () => {
    expect(parseModelId('local/llama3.1:8b', providers)).toEqual({ provider: 'local', model: 'llama3.1:8b' });
    expect(parseModelId('gpt-4o', providers)).toEqual({ provider: 'openai', model: 'gpt-4o' });
    expect(parseModelId('openai/gpt-4o', providers)).toEqual({ provider: 'openai', model: 'gpt-4o' });
    // A vLLM-style name whose first segment is no provider stays whole, at the default provider.
    expect(parseModelId('meta-llama/Llama-3-8B', providers)).toEqual({ provider: 'openai', model: 'meta-llama/Llama-3-8B' });
  });

  it('reads REIN_PROVIDERS once, validated, with keys taken from the variables it names', () => {
    const config = loadConfig({
      REIN_PROVIDERS: JSON.stringify({
        local: { baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'LOCAL_KEY', supportsJsonSchema: false },
      }),
      LOCAL_KEY: 'sk-local',
    });
    expect(config.REIN_PROVIDERS.local).toMatchObject({ apiKey: 'sk-local', supportsJsonSchema: false, supportsStreaming: true });
    expect(() => loadConfig({ REIN_PROVIDERS: JSON.stringify({ local: { baseURL: 'http://x/v1', apiKeyEnv: 'MISSING_KEY' } }) })).toThrow(
      /MISSING_KEY is not set/,
    );
    expect(() => loadConfig({ REIN_PROVIDERS: JSON.stringify({ local: { baseURL: 'not a url' } }) })).toThrow(ConfigError);
    expect(() => loadConfig({ REIN_PROVIDERS: JSON.stringify({ Local: { baseURL: 'http://x/v1' } }) })).toThrow(/REIN_PROVIDERS/);
  });
});
