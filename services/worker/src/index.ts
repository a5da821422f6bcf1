export { configuredModel, startWorker, type WorkerOptions } from './start-worker.js';
export { backoffMs, createStepWorker } from './step-worker.js';
