export { createApproverApp } from './app.js';
export { startApprover } from './start-approver.js';
