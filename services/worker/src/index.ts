export { backoffMs } from '@rein/core/internal';
export { configuredModel, startWorker, type WorkerOptions } from './start-worker.js';
export { createStepWorker } from './step-worker.js';
