import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/worker';
import { startWorker } from './start-worker.js';

const options = loadOptionsOrExit();
await startWorker(await loadAppOrExit(options), { options });
