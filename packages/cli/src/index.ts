export { DEMO_KEYS } from './demo-keys.js';
export { type DevOptions, dev } from './dev.js';
export { ensureFleet, type FleetClient, fleetClient } from './fleet-client.js';
export { commandHelp, USAGE } from './help.js';
export { follow, type RunOptions, run, whereToApprove } from './run.js';
export { createTraceRenderer, ENGLISH_LABELS, printSummary, type TraceLabels } from './trace-render.js';
