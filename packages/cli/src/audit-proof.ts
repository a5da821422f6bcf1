import { readFile, writeFile } from 'node:fs/promises';
import type { ReinClient } from '@rein/client';
import { type AuditEntry, auditEntrySchema, auditKeysSchema, auditReceiptSchema, signedCheckpointSchema } from '@rein/contract';
import { verifyCheckpoint, verifyLogAgainstCheckpoint, verifyReceipt } from '@rein/core/cli';
import type { z } from 'zod';

/** A JSON file read and checked against its schema; a file that is not one says which and why. */
async function jsonFile<T extends z.ZodType>(path: string, schema: T, what: string): Promise<z.infer<T>> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path} is not ${what}: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`${path} is not ${what}: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`);
  return parsed.data;
}

/** The public keys: the answer of GET /v1/audit/keys, saved as a file. */
const keysFile = (path: string) => jsonFile(path, auditKeysSchema, 'the answer of GET /v1/audit/keys');

/**
 * `rein audit verify --receipt r.json --public-key k.json`: offline, with no access to Rein.
 * The receipt's file may be a decision's whole answer (its `receipt` field is taken) or the receipt alone.
 */
export async function verifyReceiptFile(receiptPath: string, keysPath: string): Promise<{ ok: boolean; message: string }> {
  const raw = JSON.parse(
    await readFile(receiptPath, 'utf8').catch((err: Error) => Promise.reject(new Error(`${receiptPath}: ${err.message}`))),
  );
  const candidate = raw && typeof raw === 'object' && 'receipt' in raw ? raw.receipt : raw;
  const parsed = auditReceiptSchema.safeParse(candidate);
  if (!parsed.success)
    return { ok: false, message: `${receiptPath} is not a receipt: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}` };
  const receipt = parsed.data;
  const verdict = verifyReceipt(receipt, await keysFile(keysPath));
  if (!verdict.ok) return { ok: false, message: `receipt refused: ${verdict.problem}` };
  const { entry } = receipt;
  return {
    ok: true,
    message: `ok: entry ${receipt.seq} of ${entry.tenantId}'s decision log (${entry.action} by ${entry.actor} at ${entry.at}), hash ${receipt.hash}, signed by key ${receipt.keyId}`,
  };
}

/** Reads an export: one entry per line, oldest first (what `rein audit export` writes). */
async function exportFile(path: string): Promise<AuditEntry[]> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  return lines.map((line, i) => {
    const parsed = auditEntrySchema.safeParse(JSON.parse(line));
    if (!parsed.success) throw new Error(`${path}, line ${i + 1}, is not a decision-log entry`);
    return parsed.data;
  });
}

/**
 * `rein audit verify --log export.jsonl --checkpoint c.json [--public-key k.json]`: offline.
 * The chain from its first entry, against a checkpoint kept outside Rein (a line of the
 * checkpoint sink, or the archive's); with the keys, the checkpoint's signature too.
 */
export async function verifyLogFile(logPath: string, checkpointPath: string, keysPath?: string): Promise<{ ok: boolean; message: string }> {
  const checkpoint = await jsonFile(checkpointPath, signedCheckpointSchema, 'a signed checkpoint (a line of REIN_AUDIT_CHECKPOINT_SINK)');
  if (keysPath) {
    const signed = verifyCheckpoint(checkpoint, await keysFile(keysPath));
    if (!signed.ok) return { ok: false, message: `checkpoint refused: ${signed.problem}` };
  }
  const entries = await exportFile(logPath);
  const verdict = verifyLogAgainstCheckpoint(entries, checkpoint);
  if (!verdict.ok) return { ok: false, message: `log refused: ${verdict.problem}` };
  const last = entries.at(-1);
  return {
    ok: true,
    message: `ok: ${entries.length} entries of ${checkpoint.tenantId}, holding entry ${checkpoint.seq} as the checkpoint of ${checkpoint.at} says${keysPath ? ` (signed by key ${checkpoint.keyId})` : ' (signature not checked: no --public-key)'}; head ${last?.seq}:${last?.hash}`,
  };
}

/** `rein audit export [--out file]`: the tenant's whole decision log as JSON lines, oldest first. */
export async function exportLog(rein: Pick<ReinClient, 'audit'>, out?: string): Promise<number> {
  const lines: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await rein.audit.page({ limit: 1000, ...(cursor ? { cursor } : {}) });
    for (const e of page.entries) lines.push(JSON.stringify(e));
    cursor = page.nextCursor;
  } while (cursor);
  const text = lines.length ? `${lines.join('\n')}\n` : '';
  if (out) await writeFile(out, text, 'utf8');
  else process.stdout.write(text);
  return lines.length;
}
