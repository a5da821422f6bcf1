// The app the MCP end-to-end tests run on the stock fleet (REIN_APP): the fixture MCP
// server over Streamable HTTP (the test process serves it, so the test sees its state)
// declared twice — with and without the idempotency opt-in — and over stdio.
import { defineAgent, defineApp } from '@rein/core';
import { MCP_FIXTURE_MAIN } from '@rein/core/testing';

const url = process.env.MCP_FIXTURE_URL;
if (!url) throw new Error('MCP_FIXTURE_URL is required');

const agent = (name, tools) => defineAgent({ name, instructions: `You use ${tools.join(', ')} as asked.`, tools });

export default defineApp({
  agents: [
    agent('note-deleter', ['notes__delete_note']),
    agent('note-appender', ['notes__append_note']),
    agent('strict-appender', ['strict__append_note']),
    agent('local-reader', ['local__read_note']),
  ],
  tools: [],
  mcpServers: {
    notes: { url, tools: { append_note: { idempotent: true } } },
    strict: { url },
    local: { command: process.execPath, args: [MCP_FIXTURE_MAIN] },
  },
});
