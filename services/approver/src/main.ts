import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/http';
import { startApprover } from './start-approver.js';

const options = loadOptionsOrExit();
await startApprover(await loadAppOrExit(options), { options });
