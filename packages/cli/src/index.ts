export { DEMO_KEYS } from './demo-keys.js';
export { dev } from './dev.js';
export { ensureFleet, type FleetClient, fleetClient } from './fleet-client.js';
export { follow, type RunOptions, run } from './run.js';
export { createTraceRenderer, printSummary } from './trace-render.js';
