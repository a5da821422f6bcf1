import { loadAppOrExit, loadConfigOrExit } from '@rein/core/internal';
import { startApprover } from './start-approver.js';

const config = loadConfigOrExit();
await startApprover(await loadAppOrExit(config), { config });
