import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built `rein` command (packages/cli/dist/main.js). */
export const REIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** `rein` as a process of its own: its exit code and output. */
export function runRein(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [REIN, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Polls `probe` until it returns a value (bounded by the test's timeout, never asserting on how long it took). */
export async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Stops a service the test started and waits for it to be gone: SIGTERM, then SIGKILL after
 * 10 s. Call it before stopping the Redis or PostgreSQL it uses: a service whose stores went
 * first may wait on them for ever, and outlive the test run.
 */
export function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
