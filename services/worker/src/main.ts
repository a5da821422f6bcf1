import { loadAppOrExit, loadConfigOrExit } from '@rein/core/internal';
import { startWorker } from './start-worker.js';

const config = loadConfigOrExit();
await startWorker(await loadAppOrExit(config), { config });
