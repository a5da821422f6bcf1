import type { App, RunningService, ServiceOptions } from '@rein/core';
import { runHttpService } from '@rein/core/http';
import { createApproverApp } from './app.js';

/**
 * The approver API and console over an app, as the stock `@rein/approver` service runs it;
 * listens on APPROVER_PORT. It connects the app's MCP servers: an edit is re-judged by the tool's schema and policy.
 */
export function startApprover(app: App, options: ServiceOptions = {}): Promise<RunningService> {
  return runHttpService('approver', app, options, (http) => http.approverPort, createApproverApp, { mcp: true });
}
