export { backoffMs } from '@rein/core/worker';
export { configuredModel, startWorker, type WorkerOptions } from './start-worker.js';
export { createStepWorker } from './step-worker.js';
