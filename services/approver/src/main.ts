import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/internal';
import { startApprover } from './start-approver.js';

const options = loadOptionsOrExit();
await startApprover(await loadAppOrExit(options), { options });
