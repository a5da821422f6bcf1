import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadScript } from '../src/explicit-script.js';
import { createScriptedModelServer } from '../src/server.js';

const dir = mkdtempSync(join(tmpdir(), 'scripted-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, body: string) => {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
};

const SCRIPT = {
  turns: [
    { toolCalls: [{ name: 'read_text_file', arguments: { path: '/data/notes.md', head: 5 } }] },
    { content: 'The notes start with a title.' },
  ],
};

describe('an explicit script (SCRIPTED_MODEL_SCRIPT)', () => {
  it('plays its turns in order with the exact calls, then answers every later turn with the last one', async () => {
    const app = createScriptedModelServer({ script: loadScript(file('ok.json', JSON.stringify(SCRIPT))) });
    const tools = [{ type: 'function', function: { name: 'read_text_file', parameters: { properties: { path: { type: 'string' } } } } }];
    const ask = async (messages: object[]) =>
      (await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { messages, tools } })).json().choices[0];
    const user = { role: 'user', content: 'What do my notes say?' };
    const first = await ask([user]);
    expect(first.finish_reason).toBe('tool_calls');
    expect(
      first.message.tool_calls.map((c: { function: { name: string; arguments: string } }) => [
        c.function.name,
        JSON.parse(c.function.arguments),
      ]),
    ).toEqual([['read_text_file', { path: '/data/notes.md', head: 5 }]]);
    const called = { role: 'assistant', content: null, tool_calls: [{ id: 'c', function: { name: 'read_text_file', arguments: '{}' } }] };
    const second = await ask([user, called, { role: 'tool', tool_call_id: 'c', content: '# Notes' }]);
    expect(second).toMatchObject({ finish_reason: 'stop', message: { content: 'The notes start with a title.' } });
    const later = await ask([user, called, { role: 'assistant', content: 'x' }, { role: 'user', content: 'again?' }]);
    expect(later.message.content).toBe('The notes start with a title.');
    await app.close();
  });

  it('plays the turns of the model a request names when the script has them (byModel), the others for any other', async () => {
    const script = { ...SCRIPT, byModel: { 'model-b': [{ content: 'Model B answers at once.' }] } };
    const app = createScriptedModelServer({ script: loadScript(file('two.json', JSON.stringify(script))) });
    const ask = async (model: string) =>
      (
        await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model, messages: [{ role: 'user', content: 'hi' }] } })
      ).json().choices[0];
    expect((await ask('model-b')).message.content).toBe('Model B answers at once.');
    expect((await ask('model-a')).finish_reason).toBe('tool_calls');
    await app.close();
  });

  it('refuses a file that is not a script, saying which file and what is wrong', () => {
    expect(() => loadScript(join(dir, 'missing.json'))).toThrow(/SCRIPTED_MODEL_SCRIPT .*missing\.json/);
    expect(() => loadScript(file('bad.json', '{"turns": ['))).toThrow(/bad\.json/);
    expect(() => loadScript(file('empty.json', '{"turns": []}'))).toThrow(/turns/);
    expect(() => loadScript(file('endless.json', JSON.stringify({ turns: [SCRIPT.turns[0]] })))).toThrow(/last turn is an answer/);
    expect(() => loadScript(file('typo.json', JSON.stringify({ turns: [{ content: 'hi', toolcalls: [] }] })))).toThrow(/toolcalls/);
  });
});
