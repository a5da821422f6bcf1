import type { App, RunningService, ServiceOptions } from '@rein/core';
import { runHttpService } from '@rein/core/http';
import { createApiApp } from './app.js';

/** The runs API over an app, as the stock `@rein/api` service runs it; listens on API_PORT. */
export function startApi(app: App, options: ServiceOptions = {}): Promise<RunningService> {
  return runHttpService('api', app, options, (http) => http.apiPort, createApiApp);
}
