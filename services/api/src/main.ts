import { loadAppOrExit, loadConfigOrExit } from '@rein/core/internal';
import { startApi } from './start-api.js';

const config = loadConfigOrExit();
await startApi(await loadAppOrExit(config), { config });
