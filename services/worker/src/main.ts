import { loadAppOrExit, loadConfigOrExit } from '@rein/core';
import { startWorker } from './start-worker.js';

const config = loadConfigOrExit();
await startWorker(await loadAppOrExit(config), { config });
