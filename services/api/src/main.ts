import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/http';
import { startApi } from './start-api.js';

const options = loadOptionsOrExit();
await startApi(await loadAppOrExit(options), { options });
