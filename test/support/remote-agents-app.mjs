// The app the remote-agent end-to-end tests run on the stock fleet (REIN_APP): a remote A2A
// agent (served by the official SDK in the test process, REMOTE_AGENT_URL) called by two
// agents, once freely and once behind an approval; a third agent calls it with its questions
// asked of a person (onInputRequired: 'ask').
import { defineAgent, defineApp } from '@rein/core';

const url = process.env.REMOTE_AGENT_URL;
if (!url) throw new Error('REMOTE_AGENT_URL is required');

export default defineApp({
  agents: [
    defineAgent({ name: 'asker', instructions: 'You ask the helper agent what the user asks.', tools: ['call_helper'] }),
    defineAgent({ name: 'careful-asker', instructions: 'You ask the gated helper what the user asks.', tools: ['call_gated'] }),
    defineAgent({ name: 'curious-asker', instructions: 'You ask the curious helper what the user asks.', tools: ['call_curious'] }),
  ],
  tools: [],
  remoteAgents: {
    helper: { url, approval: false, headers: { authorization: 'Bearer helper-secret' } },
    gated: { url, approval: { requiredRole: 'supervisor' } },
    curious: { url, approval: false, onInputRequired: 'ask' },
  },
});
