import { runHttpService } from '@rein/core';
import { createApproverApp } from './app.js';

await runHttpService('approver', (c) => c.APPROVER_PORT, createApproverApp);
