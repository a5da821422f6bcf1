#!/usr/bin/env node
import { createRequire } from 'node:module';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ReinNetworkError } from '@rein/client';
import type { App, RunningService, ServiceOptions } from '@rein/core';
import { loadAppOrExit, loadOptionsOrExit } from '@rein/core/cli';
import { migrate, usage } from './archive-commands.js';
import { exportLog, verifyLogFile, verifyReceiptFile } from './audit-proof.js';
import { auditVerify, parseKeptHead } from './audit-verify.js';
import { deployCheck } from './deploy-check.js';
import { dev } from './dev.js';
import { fleetClient } from './fleet-client.js';
import { type CommandName, commandHelp, isCommand, USAGE } from './help.js';
import { replay } from './replay.js';
import { follow, run } from './run.js';
import { renderSchedule, renderSchedules } from './schedules.js';
import { versions } from './versions.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
const [command, ...rest] = process.argv.slice(2);

type Start = (app: App, options: ServiceOptions) => Promise<RunningService>;

/** One stock service; each loads only its own package, so a process starts no faster than it must. */
async function service(load: () => Promise<Start>) {
  const options = loadOptionsOrExit();
  const start = await load();
  await start(await loadAppOrExit(options), { options });
}

/**
 * The options of `name`, with `--help` on every command and `--version` on every command
 * that has no `--version` of its own (`rein replay --version V` names an app version).
 */
function options(name: CommandName, own: NonNullable<ParseArgsConfig['options']>) {
  const ownVersion = Object.hasOwn(own, 'version');
  const parsed = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      ...(ownVersion ? {} : { version: { type: 'boolean', short: 'v' } }),
      ...own,
    },
  });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) {
    process.stdout.write(`${commandHelp(name)}\n`);
    process.exit(0);
  }
  if (!ownVersion && values.version) {
    process.stdout.write(`${version}\n`);
    process.exit(0);
  }
  return { values, positionals: parsed.positionals };
}

try {
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`${version}\n`);
    process.exit(0);
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    const topic = command === 'help' ? rest[0] : undefined;
    process.stdout.write(`${topic && isCommand(topic) ? commandHelp(topic) : USAGE}\n`);
    process.exit(0);
  }
  if (!isCommand(command)) {
    process.stderr.write(`rein: unknown command "${command}"\n${USAGE}\n`);
    process.exit(2);
  }
  switch (command) {
    case 'dev': {
      const { values } = options('dev', { host: { type: 'string' } });
      await dev(typeof values.host === 'string' ? { host: values.host } : {});
      break;
    }
    case 'api':
      options('api', {});
      await service(async () => (await import('@rein/api')).startApi);
      break;
    case 'worker':
      options('worker', {});
      await service(async () => (await import('@rein/worker')).startWorker);
      break;
    case 'approver':
      options('approver', {});
      await service(async () => (await import('@rein/approver')).startApprover);
      break;
    case 'run': {
      const { values, positionals } = options('run', {
        agent: { type: 'string' },
        watch: { type: 'boolean' },
        approve: { type: 'boolean' },
        'start-fleet': { type: 'boolean' },
      });
      const input = positionals.join(' ');
      if (!input) throw new Error(`rein run needs an input\n${commandHelp('run')}`);
      await run(input, {
        ...(typeof values.agent === 'string' ? { agent: values.agent } : {}),
        watch: values.watch === true,
        approve: values.approve === true,
        startFleet: values['start-fleet'] === true,
      });
      process.exit(0);
      break;
    }
    case 'migrate':
      options('migrate', {});
      process.stdout.write(`${await migrate()}\n`);
      process.exit(0);
      break;
    case 'usage': {
      const { values } = options('usage', { from: { type: 'string' }, to: { type: 'string' }, 'group-by': { type: 'string' } });
      const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
      process.stdout.write(`${await usage({ from: str(values.from), to: str(values.to), groupBy: str(values['group-by']) })}\n`);
      process.exit(0);
      break;
    }
    case 'schedules': {
      const { positionals } = options('schedules', {});
      const { rein } = fleetClient();
      process.stdout.write(
        positionals[0] ? renderSchedule(await rein.schedules.get(positionals[0])) : renderSchedules(await rein.schedules.list()),
      );
      process.exit(0);
      break;
    }
    case 'audit': {
      const flags = ['expect-head', 'receipt', 'public-key', 'log', 'checkpoint', 'out'];
      const { values, positionals } = options('audit', Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])));
      const str = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
      if (positionals[0] === 'export') {
        const n = await exportLog(fleetClient().rein, str('out'));
        process.stderr.write(`${n} entries exported\n`);
        process.exit(0);
      }
      if (positionals[0] !== 'verify') throw new Error(`rein audit needs a subcommand\n${commandHelp('audit')}`);
      // Offline: a receipt, or an exported log against a checkpoint; no fleet is asked.
      const receipt = str('receipt');
      const log = str('log');
      let result: { ok: boolean; message: string };
      if (receipt) {
        const keys = str('public-key');
        if (!keys) throw new Error(`--receipt needs --public-key (the answer of GET /v1/audit/keys, saved)\n${commandHelp('audit')}`);
        result = await verifyReceiptFile(receipt, keys);
      } else if (log) {
        const checkpoint = str('checkpoint');
        if (!checkpoint) throw new Error(`--log needs --checkpoint (a line of the checkpoint sink)\n${commandHelp('audit')}`);
        result = await verifyLogFile(log, checkpoint, str('public-key'));
      } else {
        const head = str('expect-head');
        result = await auditVerify(fleetClient().rein, head ? parseKeptHead(head) : undefined);
      }
      (result.ok ? process.stdout : process.stderr).write(`${result.message}\n`);
      process.exit(result.ok ? 0 : 1);
      break;
    }
    case 'watch': {
      const { positionals } = options('watch', {});
      const runId = positionals[0];
      if (!runId) throw new Error(`rein watch needs a run id\n${commandHelp('watch')}`);
      const current = await fleetClient().rein.runs.get(runId);
      process.stdout.write(`input: ${current.input}\nrun ${current.id}  trace ${current.traceId}  status ${current.status}\n\n`);
      await follow(runId);
      process.exit(0);
      break;
    }
    case 'replay': {
      const flags = ['model', 'instructions-file', 'version', 'agent', 'since', 'until', 'limit', 'status', 'max-diverged', 'report'];
      const { values, positionals } = options('replay', Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])));
      const str = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
      const camel = (f: string) => f.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
      const given = Object.fromEntries(flags.flatMap((f) => (str(f) === undefined ? [] : [[camel(f), str(f)]])));
      process.exit(await replay(fleetClient().rein, positionals[0], given));
      break;
    }
    case 'deploy': {
      const flags = ['version', 'against', 'max-withdrawn', 'max-diverged', 'since', 'limit', 'report', 'json'];
      const { values, positionals } = options('deploy', {
        ...Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])),
        agent: { type: 'string', multiple: true },
      });
      if (positionals[0] !== 'check' || typeof values.version !== 'string')
        throw new Error(`rein deploy needs: check --version V\n${commandHelp('deploy')}`);
      const str = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
      const camel = (f: string) => f.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
      const given = Object.fromEntries(flags.flatMap((f) => (str(f) === undefined ? [] : [[camel(f), str(f)]])));
      const agents = Array.isArray(values.agent) ? (values.agent as string[]) : [];
      process.exit(
        await deployCheck(
          { versions: fleetClient(process.env, 'operator').rein.versions, replays: fleetClient(process.env, 'admin').rein.replays },
          {
            ...given,
            version: values.version,
            ...(agents.length ? { agents } : {}),
          },
        ),
      );
      break;
    }
    case 'versions': {
      const { values, positionals } = options('versions', { force: { type: 'boolean' }, to: { type: 'string' } });
      await versions(fleetClient(process.env, 'operator').rein, positionals, {
        force: values.force === true,
        ...(typeof values.to === 'string' ? { to: values.to } : {}),
      });
      process.exit(0);
      break;
    }
  }
} catch (err) {
  process.stderr.write(`rein: ${describeError(err)}\n`);
  process.exit(1);
}

/** What went wrong, in the user's terms: no API at the URL is a hint to start one, not `fetch failed`. */
function describeError(err: unknown): string {
  if (err instanceof ReinNetworkError) {
    const base = new URL(err.url).origin;
    return `no Rein API at ${base} (start one with \`rein dev\`, or set REIN_API_URL / REIN_APPROVER_URL)`;
  }
  return (err as Error).message;
}
