import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/internal';
import { startApi } from './start-api.js';

const options = loadOptionsOrExit();
await startApi(await loadAppOrExit(options), { options });
