#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { type App, loadAppOrExit, loadConfigOrExit, type RunningService, type ServiceOptions } from '@rein/core';
import { dev } from './dev.js';
import { fleetClient } from './fleet-client.js';
import { follow, run } from './run.js';

const USAGE = `usage:
  rein dev                                   the whole fleet here (Redis, scripted model unless OPENAI_BASE_URL, api, 2 workers, approver)
  rein api | rein worker | rein approver     one service
  rein run "<input>" [--agent A] [--watch] [--approve] [--start-fleet]
                                             submit a run (and follow it live; --approve approves what it asks for)
  rein watch <runId>                         follow a run live
The app is REIN_APP (a file path or package; default export defineApp(...)); default: the order-assistant example.`;

const [command, ...rest] = process.argv.slice(2);

type Start = (app: App, options: ServiceOptions) => Promise<RunningService>;

/** One stock service; each loads only its own package, so a process starts no faster than it must. */
async function service(load: () => Promise<Start>) {
  const config = loadConfigOrExit();
  const start = await load();
  await start(await loadAppOrExit(config), { config });
}

try {
  switch (command) {
    case 'dev':
      await dev();
      break;
    case 'api':
      await service(async () => (await import('@rein/api')).startApi);
      break;
    case 'worker':
      await service(async () => (await import('@rein/worker')).startWorker);
      break;
    case 'approver':
      await service(async () => (await import('@rein/approver')).startApprover);
      break;
    case 'run': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          agent: { type: 'string' },
          watch: { type: 'boolean' },
          approve: { type: 'boolean' },
          'start-fleet': { type: 'boolean' },
        },
      });
      const input = positionals.join(' ');
      if (!input) throw new Error(`rein run needs an input\n${USAGE}`);
      await run(input, {
        ...(values.agent ? { agent: values.agent } : {}),
        watch: values.watch ?? false,
        approve: values.approve ?? false,
        startFleet: values['start-fleet'] ?? false,
      });
      process.exit(0);
      break;
    }
    case 'watch': {
      const runId = rest[0];
      if (!runId) throw new Error(`rein watch needs a run id\n${USAGE}`);
      const current = await fleetClient().rein.runs.get(runId);
      process.stdout.write(`用户输入 / input: ${current.input}\nrun ${current.id}  trace ${current.traceId}  status ${current.status}\n\n`);
      await follow(runId);
      process.exit(0);
      break;
    }
    default:
      process.stderr.write(`${USAGE}\n`);
      process.exit(command === undefined || command === 'help' || command === '--help' ? 0 : 2);
  }
} catch (err) {
  process.stderr.write(`rein: ${(err as Error).message}\n`);
  process.exit(1);
}
