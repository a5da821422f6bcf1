import { createHash } from 'node:crypto';
import {
  type ChatMessage,
  type Decision,
  decisionSchema,
  type JournaledSummary,
  journaledSummarySchema,
  readMessage,
  type Snapshot,
  type StoredSnapshot,
  snapshotSchema,
  storedSnapshotSchema,
} from '@rein/contract';
import { ReinError } from '../../shared/errors.js';
import { runKeys } from '../../shared/keys.js';
import { type RedisClient, type RedisCommand, sendCommands } from './redis.js';

/** Hashes made, by text: the same system prompt and tool list are hashed on every step of every run. */
const hashes = new Map<string, string>();
function contentHash(text: string): string {
  let hash = hashes.get(text);
  if (hash === undefined) {
    hash = createHash('sha256').update(text).digest('base64url');
    if (hashes.size >= 1_000) hashes.clear(); // a handful of agents' texts; bounded all the same
    hashes.set(text, hash);
  }
  return hash;
}

/** Blobs of JSON values, by object: the agent's tool list is the same array step after step. */
const jsonBlobs = new WeakMap<object, { hash: string; text: string }>();
function jsonBlob(value: object): { hash: string; text: string } {
  let blob = jsonBlobs.get(value);
  if (!blob) {
    const text = JSON.stringify(value);
    blob = { hash: contentHash(text), text };
    jsonBlobs.set(value, blob);
  }
  return blob;
}

/** The leading message, if it is a plain system message that `{role, content}` rebuilds exactly. */
function systemText(first: unknown): string | undefined {
  const m = first as { role?: unknown; content?: unknown } | undefined;
  if (m?.role !== 'system' || typeof m.content !== 'string') return undefined;
  // Exactly these two keys in this order: then its JSON is that of `{role, content}`.
  const keys = Object.keys(m);
  return keys.length === 2 && keys[0] === 'role' && keys[1] === 'content' ? m.content : undefined;
}

/**
 * `log`: the run's message log as the caller just read it (parsed as the log reader
 * does) — saves reading and parsing it again on every step.
 * `storedBlobs`: hashes the run's record says are stored already (not written again).
 */
export interface SnapshotOptions {
  log?: ChatMessage[];
  storedBlobs?: readonly string[];
}

/**
 * `alongside`: writes in the run's slot sent first, in the same round trip (e.g. the last
 * model deltas). `reads`: reads of any slot sent with them, their replies returned.
 */
export interface JournalOptions extends SnapshotOptions {
  alongside?: RedisCommand[];
  reads?: RedisCommand[];
}

type LogRef = { range: [number, number]; extra: unknown[]; tail?: [number, number] };

/**
 * Where `history` sits in the run's log (compared as the log reader parses entries, so a
 * rebuild yields the same JSON): the longest run of log entries from the first one equal
 * to `history[0]`; then, if the rest of `history` ends with another run of the log (the
 * recent turns after a summary of older ones), that run as `tail`. What lies between is new.
 */
function logRef(log: ChatMessage[], history: unknown[]): LogRef {
  // The log's own objects open an uncompacted history: no need to compare their JSON.
  if (log.length <= history.length && log.every((m, i) => history[i] === m))
    return { range: [0, log.length], extra: history.slice(log.length) };
  const entries = log.map((m) => JSON.stringify(m));
  const wanted = history.map((m) => JSON.stringify(m));
  const from = wanted.length ? entries.indexOf(wanted[0] as string) : -1;
  if (from < 0) return { range: [0, 0], extra: history };
  let to = from;
  while (to < entries.length && to - from < wanted.length && entries[to] === wanted[to - from]) to++;
  const matched = to - from;
  for (let j = matched + 1; j < wanted.length; j++) {
    const at = entries.indexOf(wanted[j] as string, to);
    if (at >= 0 && wanted.slice(j).every((w, i) => entries[at + i] === w)) {
      return { range: [from, to], extra: history.slice(matched, j), tail: [at, at + wanted.length - j] };
    }
  }
  return { range: [from, to], extra: history.slice(matched) };
}

/**
 * The model's reply per step, stored before any tool runs (I3). The first
 * writer wins, so every attempt of a step acts on the same decision and its tokens
 * are counted once. Beside it, the decision snapshots: what each model call was sent
 * and returned, stored as references into the run's own log so that a run's snapshots
 * grow with its length, not with its square.
 */
export class DecisionJournal {
  constructor(private readonly redis: RedisClient) {}

  /**
   * Keeps what was sent and received for a model call (every attempt's last one per step).
   * The request's history becomes a range of the run's message log; its system prompt and
   * tool list are stored once per run under their content hash, in the run's hash slot;
   * only messages the log does not hold are stored as such. Both keys get their TTL with
   * the run's other keys, at its terminal commit.
   * Returns the hashes this snapshot refers to, for the caller to record on the run.
   */
  async snapshot(runId: string, snapshot: Snapshot, opts: SnapshotOptions = {}): Promise<string[]> {
    const { commands, hashes } = await this.snapshotWrites(runId, snapshot, opts);
    await sendCommands(this.redis, commands);
    return hashes;
  }

  /**
   * A step's decision and its snapshot, sent together (one round trip): the decision as
   * `record` journals it, the snapshot as `snapshot` keeps it. Returns the journaled
   * decision and the hashes the snapshot refers to.
   */
  async recordWithSnapshot(
    runId: string,
    decision: Decision,
    snapshot: Snapshot,
    opts: JournalOptions = {},
  ): Promise<{ decision: Decision; blobs: string[]; reads: unknown[] }> {
    const { commands, hashes } = await this.snapshotWrites(runId, snapshot, opts);
    const reads = opts.reads ?? [];
    const journaled = await this.recordAfter(runId, decision, [...reads, ...(opts.alongside ?? []), ...commands]);
    return { decision: journaled.decision, blobs: hashes, reads: journaled.replies.slice(0, reads.length) };
  }

  private async snapshotWrites(
    runId: string,
    snapshot: Snapshot,
    opts: SnapshotOptions,
  ): Promise<{ commands: RedisCommand[]; hashes: string[] }> {
    // Built by the step processor from typed values: not parsed again (it held the whole history).
    const { step, at, request, reply } = snapshot;
    const k = runKeys(runId);
    const system = systemText(request.messages[0]);
    const history = system === undefined ? request.messages : request.messages.slice(1);
    const log = opts.log ?? (history.length ? (await this.redis.lrange(k.messages, 0, -1)).map(readMessage) : []);
    const { range, extra, tail } = logRef(log, history);
    const blobs = new Map<string, string>();
    const blob = ({ hash, text }: { hash: string; text: string }) => {
      blobs.set(hash, text);
      return hash;
    };
    const stored: StoredSnapshot = {
      schemaVersion: 2,
      step,
      at,
      model: request.model,
      maxTokens: request.maxTokens,
      timeoutMs: request.timeoutMs,
      ...(request.responseFormat ? { responseFormat: request.responseFormat } : {}),
      ...(request.stream ? { stream: true } : {}),
      ...(system === undefined ? {} : { system: blob({ hash: contentHash(system), text: system }) }),
      log: range,
      extra,
      ...(tail ? { tail } : {}),
      toolNames: blob(jsonBlob(request.tools)),
      ...(request.toolSpecs ? { toolSpecs: blob(jsonBlob(request.toolSpecs)) } : {}),
      reply,
    };
    // The texts go first on the connection: a snapshot is never visible before what it names.
    const commands: RedisCommand[] = [...blobs]
      .filter(([hash]) => !opts.storedBlobs?.includes(hash))
      .map(([hash, text]) => ['hsetnx', k.blobs, hash, text]);
    commands.push(['hset', k.snapshots, String(step), JSON.stringify(stored)]);
    return { commands, hashes: [...blobs.keys()] };
  }

  /** Every snapshot of the run, each request rebuilt exactly as it was sent. */
  async snapshots(runId: string): Promise<Snapshot[]> {
    const k = runKeys(runId);
    // Sent in this order on one connection: the log, read last, holds every range the records name.
    const [records, blobs, log] = await Promise.all([
      this.redis.hvals(k.snapshots),
      this.redis.hgetall(k.blobs),
      this.redis.lrange(k.messages, 0, -1),
    ]);
    const logged = log.map(readMessage); // parsed once; snapshots share their messages
    const text = (hash: string) => {
      const found = blobs[hash];
      if (found === undefined) throw new ReinError('snapshot_incomplete', `run ${runId}: snapshot content ${hash} is gone`);
      return found;
    };
    return records
      .map((raw): Snapshot => {
        const doc = JSON.parse(raw) as { schemaVersion?: unknown };
        if (doc.schemaVersion === 1) return snapshotSchema.parse(doc); // written whole, before version 2
        const s = storedSnapshotSchema.parse(doc);
        const slice = ([from, to]: [number, number]) => {
          if (to > logged.length) throw new ReinError('snapshot_incomplete', `run ${runId}: step ${s.step} refers past the message log`);
          return logged.slice(from, to);
        };
        const messages = [
          ...(s.system === undefined ? [] : [{ role: 'system', content: text(s.system) }]),
          ...slice(s.log),
          ...s.extra,
          ...(s.tail ? slice(s.tail) : []),
        ];
        return {
          schemaVersion: 1,
          step: s.step,
          at: s.at,
          request: {
            model: s.model,
            messages,
            tools: JSON.parse(text(s.toolNames)) as string[],
            ...(s.toolSpecs === undefined ? {} : { toolSpecs: JSON.parse(text(s.toolSpecs)) as Array<Record<string, unknown>> }),
            maxTokens: s.maxTokens,
            timeoutMs: s.timeoutMs,
            ...(s.responseFormat ? { responseFormat: s.responseFormat } : {}),
            ...(s.stream ? { stream: true } : {}),
          },
          reply: s.reply,
        };
      })
      .sort((a, b) => a.step - b.step);
  }

  async get(runId: string, step: number): Promise<Decision | null> {
    const raw = await this.redis.hget(runKeys(runId).decisions, String(step));
    return raw ? decisionSchema.parse(JSON.parse(raw)) : null;
  }

  /** The journaled summary of a step's older turns, if its model call was made. */
  async summary(runId: string, step: number): Promise<JournaledSummary | null> {
    const raw = await this.redis.hget(runKeys(runId).decisions, summaryField(step));
    return raw ? journaledSummarySchema.parse(JSON.parse(raw)) : null;
  }

  /** Records `summary` unless one exists (same hash as the decisions, so the same lifetime); returns the journaled one. */
  async recordSummary(runId: string, summary: JournaledSummary): Promise<JournaledSummary> {
    const key = runKeys(runId).decisions;
    const written = await this.redis.hsetnx(key, summaryField(summary.step), JSON.stringify(journaledSummarySchema.parse(summary)));
    if (written === 1) return summary;
    return (await this.summary(runId, summary.step)) ?? summary;
  }

  /** Records `decision` unless one exists; returns the journaled one either way. */
  async record(runId: string, decision: Decision): Promise<Decision> {
    return (await this.recordAfter(runId, decision, [])).decision;
  }

  /** `record`, with `before` sent ahead of it in the same round trip; their replies are returned. */
  private async recordAfter(
    runId: string,
    decision: Decision,
    before: RedisCommand[],
  ): Promise<{ decision: Decision; replies: unknown[] }> {
    const key = runKeys(runId).decisions;
    // Built from the gateway's validated reply as a typed value: not parsed again on its way out; reads parse it.
    const replies = await sendCommands(this.redis, [...before, ['hsetnx', key, String(decision.step), JSON.stringify(decision)]]);
    if (replies.at(-1) === 1) return { decision, replies };
    const existing = await this.get(runId, decision.step);
    if (!existing) throw new Error(`decision journal lost step ${decision.step} of run ${runId}`);
    return { decision: existing, replies };
  }
}

/** A summary's field in the decisions hash: beside the step's decision (`<step>`), never mistaken for one. */
const summaryField = (step: number) => `summary:${step}`;
