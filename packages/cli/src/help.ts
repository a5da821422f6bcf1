/** The `rein` commands, their usage and help text, and the environment each reads. */

const CLIENT_ENV = [
  ['REIN_API_URL', 'the runs API (default http://127.0.0.1:$API_PORT, port 8080)'],
  ['REIN_APPROVER_URL', 'the approver (default http://127.0.0.1:$APPROVER_PORT, port 8081)'],
  [
    'REIN_API_KEY',
    'the key to call as (default: the first of REIN_API_KEYS, else the demo user key; rein versions: the first operator key)',
  ],
  ['REIN_API_KEYS', 'the keys the fleet accepts, JSON (default: the public demo keys)'],
] as const;

const SERVICE_ENV = [
  ['REIN_APP', 'the app: a file path or package whose default export is defineApp(...) (default: the order-assistant example)'],
  ['REDIS_URL', 'Redis (default redis://127.0.0.1:6379)'],
  ['OPENAI_BASE_URL', 'an OpenAI-compatible model API (rein dev starts the scripted model when unset)'],
  ['REIN_BIND_HOST', 'the address services listen on (rein dev: 127.0.0.1 unless --host)'],
  ['API_PORT, APPROVER_PORT', 'the API (8080) and approver (8081) ports'],
  ['WORKER_METRICS_PORT', "a worker's /metrics and /healthz port (9464; rein dev's second worker takes the next)"],
  ['REIN_LOG_FORMAT', 'json keeps raw JSON log lines (rein dev prints them pretty otherwise)'],
] as const;

const env = (vars: ReadonlyArray<readonly [string, string]>) => vars.map(([name, what]) => `  ${name.padEnd(24)} ${what}`).join('\n');

const COMMANDS = {
  dev: {
    usage: 'rein dev [--host ADDRESS]',
    summary: 'the whole fleet here (Redis, scripted model unless OPENAI_BASE_URL, api, 2 workers, approver)',
    details: `Refuses to start when a port it needs is taken, naming the port and its process.
Listens on 127.0.0.1 (the demo keys are public); --host 0.0.0.0 exposes it.
  --host ADDRESS           the address the services listen on (also: REIN_BIND_HOST)
Also reads SCRIPTED_MODEL_PORT (8090).`,
    env: [...SERVICE_ENV, ...CLIENT_ENV.slice(3)],
  },
  api: { usage: 'rein api', summary: 'the runs API, one service', details: '', env: SERVICE_ENV },
  worker: { usage: 'rein worker', summary: 'a step worker, one service', details: '', env: SERVICE_ENV },
  approver: { usage: 'rein approver', summary: 'the approver and its console, one service', details: '', env: SERVICE_ENV },
  run: {
    usage: 'rein run "<input>" [--agent A] [--watch] [--approve] [--start-fleet]',
    summary: 'submit a run (and follow it live)',
    details: `  --agent A                the agent to run (default: the app's first)
  --watch                  follow the run live; when it parks, says where to approve
  --approve                approve whatever it asks for, as an approver: REIN_APPROVER_KEY, else the
                           first approver (then supervisor, admin) key of REIN_API_KEYS (demo shortcut)
  --start-fleet            start a fleet (rein dev) if none answers`,
    env: CLIENT_ENV,
  },
  watch: { usage: 'rein watch <runId>', summary: 'follow a run live', details: '', env: CLIENT_ENV },
  replay: {
    usage: 'rein replay <runId> [--model M] [--instructions-file F] | --agent A --since 24h --limit N [--max-diverged 10%] [--report F]',
    summary: 'replay a run (or a cohort) with another model or prompt; tools answer from the records',
    details: `  <runId>                  replay one finished run and print the diff, original | replay
  --model M                the model the replay calls
  --instructions-file F    the agent's instructions for the replay, from a file
  --version V              the app version to replay on (default: the current one; here --version
                           names an app version, not the CLI's)
  --agent A                a cohort: finished runs of agent A (approver or admin key)
  --since D                created since D ago (24h, 90m, 7d) or an ISO instant; --until likewise
  --limit N                at most N runs, sampled evenly; --status S only runs that ended S
  --max-diverged P         exit 1 when more than P (10% or 0.1) of the replays diverged, or none was replayed
  --report F               write the Markdown report to F (default: print it)`,
    env: CLIENT_ENV,
  },
  versions: {
    usage: 'rein versions [promote <version> [--force] | upgrade <version> [--to V]]',
    summary: "the fleet's app versions (an operator key); promote one, or move a version's runs",
    details: `  (no subcommand)          each version: current, live workers, unfinished runs, pending approvals
  promote <version>        new runs go to it on every API process (also the rollback)
  --force                  promote a version no worker runs (its new runs wait for one)
  upgrade <version>        its unfinished runs move to the current version (or --to V) at their next step`,
    env: CLIENT_ENV,
  },
  deploy: {
    usage:
      'rein deploy check --version V [--against V0] [--max-withdrawn N] [--max-diverged P] [--agent A]... [--since 24h] [--limit N] [--report F] [--json F]',
    summary: 'before promoting V: what it would change in flight, and how recent runs replay on it (a CI gate)',
    details: `Needs REIN_API_KEY holding the operator and admin roles (else the first operator and the first
admin key of REIN_API_KEYS) and a live worker of V (a canary).
Asks GET /v1/versions/V/impact (tools, agents and MCP servers that differ from V0 — default the
current version —, approvals an upgrade would withdraw, runs and schedules whose agent changed),
then replays each agent's recent runs on V as a cohort of the key's tenant. Changes nothing.
  --max-withdrawn N        exit 1 when more than N approvals would be withdrawn
  --max-diverged P         exit 1 when more than P (10% or 0.1) of the replays diverged
  --agent A                replay only these agents (repeatable; default: every agent V serves)
  --since D, --limit N     the runs replayed: created since D ago (24h), at most N per agent (20)
  --report F, --json F     write the Markdown report to F (default: print it), the JSON one to F
Exit 1 also when nothing was replayed: a gate with nothing to judge fails.`,
    env: CLIENT_ENV,
  },
  audit: {
    usage:
      'rein audit verify [--expect-head <seq>:<hash>] | verify --receipt F --public-key K | verify --log F --checkpoint C [--public-key K] | export [--out F]',
    summary: "check the tenant's decision log, a decision's receipt, or an exported log, offline where it can",
    details: `verify: reads GET /v1/audit as REIN_API_KEY (a tenant admin) from the first entry on.
Exits 0 when the chain holds, 1 naming the first entry altered, removed or moved.
  --expect-head SEQ:HASH   a head an earlier verify printed and you kept: exit 1 when the chain
                           ends before entry SEQ or holds another entry there (truncated)
With the archive on, the chain is also checked against its latest head checkpoint.
Offline (no fleet asked; exit 1 naming what does not hold):
  verify --receipt F --public-key K   a decision's receipt (F: the receipt, or the decision's whole
                                      answer); K: the answer of GET /v1/audit/keys, saved
  verify --log F --checkpoint C       an exported log (rein audit export) against a checkpoint kept
                                      outside Rein (a line of REIN_AUDIT_CHECKPOINT_SINK); with
                                      --public-key K the checkpoint's signature too
export [--out F]: the tenant's whole decision log as JSON lines, oldest first (stdout without --out).`,
    env: CLIENT_ENV,
  },
  migrate: {
    usage: 'rein migrate',
    summary: "apply the run archive's schema migrations (PostgreSQL; safe to run from several places at once)",
    details: '',
    env: [['REIN_ARCHIVE_URL', 'the archive, a postgres:// URL']],
  },
  usage: {
    usage: 'rein usage [--from ISO] [--to ISO] [--group-by agent|model|user|day|mode]',
    summary: "the tenant's usage from the run archive (approver or admin key)",
    details: `  --from ISO               runs created at or after (default: 7 days before --to)
  --to ISO                 runs created before (default: now)
  --group-by KEY           agent, model, user, day or mode (live or replay) (default: day)`,
    env: CLIENT_ENV,
  },
  schedules: {
    usage: 'rein schedules [<scheduleId>]',
    summary: "the caller's schedules (an admin's: the tenant's); with an id, its latest firings",
    details: '',
    env: CLIENT_ENV,
  },
} as const;

export type CommandName = keyof typeof COMMANDS;
export const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);

export const USAGE = `usage:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage.padEnd(72)} ${c.summary}`)
  .join('\n')}
  rein --version                                                           the version
Every command takes --help (its options and the environment it reads) and --version (rein replay's names an app version).
The services read the rest of their configuration from the environment (docs/configuration.md).

environment:
${env(SERVICE_ENV.slice(0, 3))}
${env(CLIENT_ENV)}`;

export function commandHelp(name: CommandName): string {
  const c = COMMANDS[name];
  return [`usage: ${c.usage}`, '', c.summary, ...(c.details ? ['', c.details] : []), '', 'environment:', env(c.env)].join('\n');
}
