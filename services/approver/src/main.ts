import { loadAppOrExit, loadConfigOrExit } from '@rein/core';
import { startApprover } from './start-approver.js';

const config = loadConfigOrExit();
await startApprover(await loadAppOrExit(config), { config });
