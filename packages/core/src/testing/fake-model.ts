import type { ModelGateway, ModelReply, ModelRequest } from '../adapters/model/model-gateway.js';

export type FakeTurn = Partial<ModelReply> | ((request: ModelRequest, call: number) => Partial<ModelReply> | Promise<Partial<ModelReply>>);

/** A fake model for engine tests: returns the given turns in order and records every request. */
export function createFakeModel(turns: FakeTurn[]): ModelGateway & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    requests,
    async complete(request) {
      requests.push(request);
      const turn = turns[Math.min(requests.length - 1, turns.length - 1)];
      if (!turn) throw new Error('fake model has no turns');
      const reply = typeof turn === 'function' ? await turn(request, requests.length - 1) : turn;
      return {
        model: 'fake-model',
        content: null,
        toolCalls: [],
        usage: { promptTokens: 100, completionTokens: 10 },
        ...reply,
      };
    },
  };
}

/** A tool call as a model would write it. */
export const toolCall = (id: string, name: string, args: unknown) => ({
  id,
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});
