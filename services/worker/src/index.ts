export { backoffMs, createStepWorker } from './step-worker.js';
export { configuredModel, startWorker, type WorkerOptions } from './start-worker.js';
