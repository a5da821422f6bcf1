export { createApiApp } from './app.js';
export { startApi } from './start-api.js';
