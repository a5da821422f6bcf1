import type { Principal, RunView } from '@rein/contract';
import type { SseFrames, SseSource } from '../../adapters/redis/stream-hub.js';
import { runOfApproval } from '../../policy/approvals/approval-id.js';
import type { ApprovalFacts, DoorEntry, Translated } from '../../policy/frontends/door-entry.js';
import { ConflictError, ForbiddenError, GoneError, InvalidRequestError, NotFoundError } from '../../shared/errors.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { RunService } from '../runs/run-service.js';

export interface DoorDeps {
  runs: Pick<RunService, 'submit' | 'get' | 'events' | 'session' | 'cancel'>;
  approvals: Pick<ApprovalService, 'decide' | 'preview'>;
}

/** One decision a protocol carries: approve (maybe with edited arguments) or reject. */
export interface DoorDecision {
  approvalId: string;
  approve: boolean;
  arguments?: Record<string, unknown>;
  reason?: string;
}

/** What a door streams: Rein's events of one run from `from`, written by the protocol's translator. */
export interface DoorStream {
  source: SseSource<DoorEntry>;
  frames: SseFrames<DoorEntry>;
  from: string;
}

/** What a protocol's translator gives a segment of a run: its first frames, each entry's, and its end. */
export interface Segment<F> {
  headers?: Record<string, string>;
  /** The segment's first frames, asked for once what the client had seen was translated. */
  start(): F[];
  translate(entry: DoorEntry, quiet: boolean): Translated<F>;
  /** Frames when the stream stops without the translator having ended it. */
  end(): F[];
  /** Frames after everything (the AI SDK's `[DONE]`), as payloads. */
  trailer?: string[];
  /** `start` is the whole answer: nothing of the run is followed (decisions were refused, the run stays parked). */
  final?: boolean;
}

/**
 * What both protocol doors share: they submit runs and decide approvals through the run
 * and approval services (so every rule of `POST /v1/runs` and of the approval routes
 * applies), and stream a run's masked events through a protocol's translator.
 */
export function createDoorRuns(deps: DoorDeps) {
  /** A pending approval as a door shows it, read with the caller's visibility, with its tool's argument schema. */
  async function approvalFacts(principal: Principal, id: string): Promise<ApprovalFacts | undefined> {
    try {
      const { approval: a, parameters } = await deps.approvals.preview(principal, id);
      const schema = parameters[a.toolName];
      return {
        id: a.id,
        toolCallId: a.toolCallId,
        toolName: a.toolName,
        arguments: a.approvedArguments ?? a.arguments,
        summary: a.summary,
        expiresAt: a.expiresAt,
        ...(schema ? { schema } : {}),
      };
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  /** The run's event source with each `approval.requested` carrying its approval's facts. */
  async function source(principal: Principal, runId: string): Promise<SseSource<DoorEntry>> {
    const events = await deps.runs.events(principal, runId);
    return {
      key: events.key,
      ended: events.ended,
      read: async (cursor) =>
        Promise.all(
          (await events.read(cursor)).map(async (e): Promise<DoorEntry> => {
            const approvalId = e.event.type === 'approval.requested' ? String(e.event.data.approvalId) : undefined;
            const approval = approvalId ? await approvalFacts(principal, approvalId) : undefined;
            return { id: e.id, event: e.event, ...(approval ? { approval } : {}) };
          }),
        ),
    };
  }

  /** Everything the run's stream holds now, in order: what a client answering its approvals has already seen. */
  async function readAll(src: SseSource<DoorEntry>): Promise<DoorEntry[]> {
    const all: DoorEntry[] = [];
    for (let cursor = '0'; ; ) {
      const batch = await src.read(cursor);
      if (batch.length === 0) return all;
      all.push(...batch);
      cursor = (batch.at(-1) as DoorEntry).id;
    }
  }

  const toFrames = <F>(segment: Segment<F>, followed: SseSource<DoorEntry>, from: string): DoorStream => {
    let last = segment.final === true;
    const src = last ? { key: followed.key, read: async () => [], ended: async () => true } : followed;
    const json = (frames: F[]) => frames.map((f) => JSON.stringify(f));
    return {
      from,
      source: { ...src, isLast: () => last },
      frames: {
        ...(segment.headers ? { headers: segment.headers } : {}),
        open: () => json(segment.start()),
        entry: (entry) => {
          const t = segment.translate(entry, false);
          last = t.last;
          return json(t.frames);
        },
        close: () => [...(last ? [] : json(segment.end())), ...(segment.trailer ?? [])],
      },
    };
  };

  return {
    approvalFacts,

    /** A new message's run, or the run an earlier send of the same message started (`key`: its idempotency key). */
    async submit(principal: Principal, agent: string, input: string, sessionId: string, key: string): Promise<RunView> {
      return (await deps.runs.submit(principal, { agent, input, sessionId }, key)).run;
    },

    /**
     * Decides what a client answered, each with the caller's own rights, on runs of this
     * chat or thread only. A decision the caller may not make is returned as a refusal
     * (the approval stays pending for an approver); one already made (a resent answer) is
     * skipped. Answers naming approvals of another run, session, agent or tenant are 404.
     */
    async decide(principal: Principal, agent: string, sessionId: string, decisions: DoorDecision[]) {
      const runIds = new Set(decisions.map((d) => runOfApproval(d.approvalId)));
      const [runId] = runIds;
      if (!runId || runIds.size !== 1) throw new NotFoundError(`approval ${decisions[0]?.approvalId ?? ''}`);
      const run = await deps.runs.get(principal, runId).catch((err) => {
        throw err instanceof NotFoundError ? new NotFoundError(`approval ${decisions[0]?.approvalId}`) : err;
      });
      if (run.sessionId !== sessionId || run.agent !== agent) throw new NotFoundError(`approval ${decisions[0]?.approvalId}`);
      if (run.status !== 'pending_approval') return { runId, refusals: [], pending: [] };
      const refusals: Array<{ approvalId: string; code: string; message: string }> = [];
      for (const d of decisions) {
        try {
          await deps.approvals.decide(
            principal,
            d.approvalId,
            d.approve
              ? { kind: 'approve', ...(d.reason ? { comment: d.reason } : {}), ...(d.arguments ? { arguments: d.arguments } : {}) }
              : { kind: 'reject', reason: d.reason ?? 'rejected in the chat' },
          );
        } catch (err) {
          // Not the caller's to decide, or an edit (an answer) the tool does not take: said, and the approval waits.
          if (err instanceof ForbiddenError || err instanceof InvalidRequestError)
            refusals.push({ approvalId: d.approvalId, code: err.code, message: err.message });
          else if (!(err instanceof ConflictError || err instanceof GoneError)) throw err;
        }
      }
      // Still parked (a decision refused, or an approval left unanswered): nothing resumes; say what waits.
      const after = await deps.runs.get(principal, runId);
      const waiting = after.status === 'pending_approval' ? after.pendingApprovals.map((a) => a.id) : [];
      const pending = (await Promise.all(waiting.map((id) => approvalFacts(principal, id)))).filter((a) => a !== undefined);
      return { runId, refusals, pending };
    },

    /** A new run's segment: everything from its first event. */
    async fresh<F>(principal: Principal, runId: string, segment: (quiet: DoorEntry[]) => Segment<F>): Promise<DoorStream> {
      return toFrames(segment([]), await source(principal, runId), '0');
    },

    /**
     * A continuation: what the stream holds before `act` (what the client has seen) is
     * translated quietly to rebuild the translator; then `act` decides, and what follows streams.
     */
    async continued<F, R>(
      principal: Principal,
      runId: string,
      act: () => Promise<R>,
      segment: (seen: DoorEntry[], acted: R) => Segment<F>,
    ): Promise<DoorStream> {
      const src = await source(principal, runId);
      const seen = await readAll(src);
      const acted = await act();
      const built = segment(seen, acted);
      for (const entry of seen) built.translate(entry, true);
      return toFrames(built, src, seen.at(-1)?.id ?? '0');
    },

    /** The latest run of the caller's session, if any. */
    async latestRun(principal: Principal, sessionId: string): Promise<RunView | undefined> {
      try {
        return (await deps.runs.session(principal, sessionId)).runs.at(-1);
      } catch (err) {
        if (err instanceof NotFoundError) return undefined;
        throw err;
      }
    },

    cancel: (principal: Principal, runId: string) => deps.runs.cancel(principal, runId),
  };
}

export type DoorRuns = ReturnType<typeof createDoorRuns>;
