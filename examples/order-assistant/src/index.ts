import { defineApp } from '@rein/core';
import { HANDOFF_ANSWER, orderAssistant, orderAssistantVerbatim, orderDesk, orderPlanner, refundsAgent } from './agent.js';
import { DemoStore } from './demo-store.js';
import { inputRules, piiRules } from './guards.js';
import { PolicySearch } from './policy-search.js';
import { createOrderTools } from './tools.js';

export { HANDOFF_ANSWER, orderAssistant, orderAssistantVerbatim, orderDesk, orderPlanner, refundsAgent } from './agent.js';
export { DemoStore, type Email, type Order, type Refund, type Ticket, type Undo } from './demo-store.js';
export { inputRules, piiRules } from './guards.js';
export { PolicySearch, tokenize } from './policy-search.js';
export { createOrderTools } from './tools.js';

/** The order assistant as a Rein app: what the services run when REIN_APP is not set. */
export default defineApp({
  agents: [orderAssistant, orderPlanner, orderAssistantVerbatim, orderDesk, refundsAgent],
  tools: ({ redis }) => createOrderTools({ store: new DemoStore(redis), policies: new PolicySearch() }),
  guards: { input: inputRules, pii: piiRules },
  handoffAnswer: HANDOFF_ANSWER,
});
