import { runHttpService } from '@rein/core';
import { createApiApp } from './app.js';

await runHttpService('api', (c) => c.API_PORT, createApiApp);
