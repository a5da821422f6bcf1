import { appendFile, readFile } from 'node:fs/promises';
import type { SignedCheckpoint } from '@rein/contract';
import { AUDIT_CHECKPOINT, housekeepingJobSchema } from '../../adapters/queue/job-catalog.js';
import type { JobHandlers } from '../../adapters/queue/job-table.js';
import type { AuditLog, AuditProof, CheckpointSink } from '../../adapters/redis/audit-log.js';
import { createAuditSigner } from '../../policy/audit/receipts.js';
import { ConfigError, ReinError } from '../../shared/errors.js';
import type { Metrics } from '../../shared/metrics.js';
import type { ReinOptions } from '../../shared/options.js';
import { postGuarded } from '../webhooks/webhook-delivery.js';

/** How long the HTTP sink may take to answer one checkpoint. */
const SINK_TIMEOUT_MS = 10_000;

/** A PEM given inline (`\n` escapes allowed, as env files write it) or the path of a file holding one. */
async function pemOf(value: string, what: string): Promise<string> {
  if (value.includes('-----BEGIN')) return value.replace(/\\n/g, '\n');
  try {
    return await readFile(value, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid environment:\n  ${what}: neither a PEM nor a readable file (${(err as Error).message})`);
  }
}

/** Appends each checkpoint as one JSON line: a file the operator ships elsewhere (object storage with retention lock, say). */
function fileSink(path: string): CheckpointSink {
  return {
    name: `file ${path}`,
    write: (c: SignedCheckpoint) => appendFile(path, `${JSON.stringify(c)}\n`, { encoding: 'utf8', mode: 0o600 }),
  };
}

/** POSTs each checkpoint as JSON (a transparency log, a bucket's upload endpoint), through the webhooks' address guard. */
function httpSink(url: URL, allowPrivate: boolean): CheckpointSink {
  return {
    name: `${url.protocol}//${url.host}${url.pathname}`,
    async write(c: SignedCheckpoint) {
      const res = await postGuarded(url, JSON.stringify(c), {}, { allowPrivate, timeoutMs: SINK_TIMEOUT_MS });
      if (res.status < 200 || res.status >= 300)
        throw new ReinError('checkpoint_sink_refused', `the checkpoint sink answered ${res.status}`, { retryable: true });
    },
  };
}

/**
 * What makes the decision log provable outside Rein, from the options: the signer of
 * receipts and checkpoints (REIN_AUDIT_SIGNING_KEY, with the keys it retired) and the
 * checkpoint sink. None without a key; a sink without a key is a configuration error, as is
 * a key that is not Ed25519.
 */
export async function auditProofFrom(audit: ReinOptions['audit'], allowPrivate: boolean): Promise<AuditProof | undefined> {
  if (!audit.signingKey) {
    if (audit.checkpointSink)
      throw new ConfigError('invalid environment:\n  REIN_AUDIT_CHECKPOINT_SINK: needs REIN_AUDIT_SIGNING_KEY (checkpoints are signed)');
    return undefined;
  }
  const privatePem = await pemOf(audit.signingKey, 'REIN_AUDIT_SIGNING_KEY (the audit key)');
  const retired = await Promise.all(audit.retiredKeys.map((k, i) => pemOf(k, `REIN_AUDIT_RETIRED_KEYS[${i}]`)));
  let signer: AuditProof['signer'];
  try {
    signer = createAuditSigner(privatePem, retired);
  } catch (err) {
    throw new ConfigError(`invalid environment:\n  REIN_AUDIT_SIGNING_KEY: ${(err as Error).message}`);
  }
  const sink = audit.checkpointSink;
  if (!sink) return { signer };
  return { signer, sink: sink.startsWith('/') ? fileSink(sink) : httpSink(new URL(sink), allowPrivate) };
}

/**
 * The checkpoint pass: copies each tenant's decision-log head to the archive and the
 * checkpoint sink (signed with the audit key); a log that no longer holds its last
 * checkpoint was truncated. `enabled`: with the archive or a sink only.
 */
export const auditJobs = (
  audit: Pick<AuditLog, 'checkpointAll'>,
  metrics: Metrics,
  enabled: boolean,
): JobHandlers<typeof AUDIT_CHECKPOINT.name> => ({
  [AUDIT_CHECKPOINT.name]: {
    schema: housekeepingJobSchema,
    run: async () => {
      if (!enabled) return 'no archive, no sink';
      const { written, behind, sinkBehind } = await audit.checkpointAll();
      metrics.auditLogsBehind.set(behind.length);
      metrics.auditSinkBehind.set(sinkBehind.length);
      return `checkpointed ${written}, behind ${behind.length}, sink behind ${sinkBehind.length}`;
    },
  },
});
