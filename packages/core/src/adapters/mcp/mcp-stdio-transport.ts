import { type ChildProcess, spawn } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface McpStdioParams {
  command: string;
  args?: string[] | undefined;
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
}

/** How long a server gets after the end of its stdin, and then after SIGTERM, before the next step. */
const GRACE_MS = 2_000;

/**
 * The guard a server runs under (`node -e`, so it needs no file of its own): the leader
 * of the server's process group, linked to the worker by an IPC channel. It outlives a
 * SIGTERM (meant for the server) and ends the whole group with SIGKILL when the server
 * exits or when the channel drops, which the kernel does when the worker dies, even by
 * SIGKILL. It tells the worker whether the server started.
 */
const GUARD = `
const { spawn } = require('node:child_process');
const [command, ...args] = process.argv.slice(1);
const end = () => { try { process.kill(-process.pid, 'SIGKILL'); } catch { process.exit(1); } };
const tell = (message, then) => { try { process.send(message, then); } catch { then?.(); } };
process.on('SIGTERM', () => {});
process.on('disconnect', end);
const server = spawn(command, args, { stdio: 'inherit' });
server.on('spawn', () => tell({ spawned: server.pid }));
server.on('error', (err) => tell({ error: err.message }, end));
server.on('exit', end);
`;

/**
 * MCP over stdio with a server that cannot outlive its worker. The SDK's transport
 * signals only its direct child, which a server ignoring EOF and SIGTERM survives, with
 * its children, and nothing is left to stop it when the worker is killed. Here the
 * server runs in a process group of its own under a guard (see GUARD); `close` ends its
 * stdin, then signals the group SIGTERM and at last SIGKILL.
 */
export class McpStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  private readonly buffer = new ReadBuffer();

  constructor(private readonly params: McpStdioParams) {}

  /** The guard's pid, which is also the process group of the server. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    const { command, args = [], env, cwd } = this.params;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', GUARD, '--', command, ...args], {
        detached: true,
        stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
        env: { ...getDefaultEnvironment(), ...env },
        ...(cwd ? { cwd } : {}),
      });
      this.child = child;
      child.on('message', (m: { spawned?: number; error?: string }) => {
        if (m.error !== undefined) reject(new Error(`could not start "${command}": ${m.error}`));
        else resolve();
      });
      child.on('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on('close', () => {
        if (this.child === child) this.child = undefined;
        reject(new Error(`"${command}" exited before it started`));
        this.onclose?.();
      });
      child.stdin?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('data', (chunk: Buffer) => this.read(chunk));
    });
  }

  private read(chunk: Buffer) {
    try {
      this.buffer.append(chunk);
    } catch (err) {
      this.onerror?.(err as Error);
      void this.close();
      return;
    }
    for (;;) {
      try {
        const message = this.buffer.readMessage();
        if (message === null) return;
        this.onmessage?.(message);
      } catch (err) {
        this.onerror?.(err as Error);
      }
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin) return reject(new Error('Not connected'));
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const closed = new Promise<boolean>((resolve) => child.once('close', () => resolve(true)));
      const within = () => Promise.race([closed, new Promise<boolean>((r) => setTimeout(r, GRACE_MS, false).unref())]);
      child.stdin?.end();
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        if (await within()) break;
        signalGroup(child, signal);
      }
      await within();
    }
    this.buffer.clear();
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}
