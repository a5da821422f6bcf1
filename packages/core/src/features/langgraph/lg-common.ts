import type { AgentCatalog, Tool } from '@rein/define/internal';
import type { SseSource } from '../../adapters/redis/stream-hub.js';
import type { StoredEvent } from '../../policy/ports/run-repository.js';
import { ReinError } from '../../shared/errors.js';
import type { PiiMasker } from '../../shared/guards/pii-masker.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import type { RunService } from '../runs/run-service.js';
import type { ScheduleService } from '../schedules/schedule-service.js';
import type { ThreadStore } from './thread-store.js';

/** What Rein does not do through this door: 501 with a stable code and what to use instead. */
export class NotServedError extends ReinError {
  override readonly name = 'NotServedError';
  constructor(what: string, instead: string) {
    super('not_served', `${what} is not served by Rein's LangGraph API: ${instead}`, { status: 501 });
  }
}

/** Follows a run's event stream (the API's `EventStreams.follow`): batches as they come, an empty one on a quiet heartbeat. */
export type FollowEvents = (source: SseSource<StoredEvent>, fromId: string, signal: AbortSignal) => AsyncIterable<StoredEvent[]>;

export interface LangGraphServiceDeps {
  runs: RunService;
  approvals: Pick<ApprovalService, 'decide'>;
  agents: AgentCatalog;
  tools: Map<string, Tool>;
  threads: ThreadStore;
  schedules: Pick<ScheduleService, 'create' | 'list' | 'get' | 'patch' | 'remove'>;
  masker: PiiMasker;
  follow: FollowEvents;
  /** The app version runs start on: what an assistant's metadata names. */
  appVersion: string;
  now?: () => number;
}

export type Opt<T> = T | null | undefined;
export const given = <T>(v: Opt<T>): v is T => v !== null && v !== undefined;
export const matches = (meta: Record<string, unknown>, filter: Opt<Record<string, unknown>>) =>
  !filter || Object.entries(filter).every(([k, v]) => JSON.stringify(meta[k]) === JSON.stringify(v));
export const page = <T>(items: T[], q: { limit: number; offset: number }) => items.slice(q.offset, q.offset + q.limit);
