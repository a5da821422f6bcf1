import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** Whether `port` can be bound on `host` right now (a wildcard listener elsewhere takes it too). */
export const portFree = (port: number, host: string) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });

/** The inodes of the sockets listening on `port` (any address), from /proc/net/tcp and tcp6. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1]?.split(':')[1];
      // st 0A is LISTEN; column 9 is the socket's inode.
      if (local && Number.parseInt(local, 16) === port && cols[3] === '0A' && cols[9]) inodes.add(cols[9]);
    }
  }
  return inodes;
}

const describePid = (pid: string) => {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return `pid ${pid}${cmd ? ` (${cmd.length > 120 ? `${cmd.slice(0, 120)}…` : cmd})` : ''}`;
  } catch {
    return `pid ${pid}`;
  }
};

/** The process holding /proc's socket inodes: its fds link to `socket:[inode]` (readable for our own processes). */
function ownerFromProc(port: number): string | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m?.[1] && inodes.has(m[1])) return describePid(pid);
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  return undefined;
}

/** `ss -ltnp` where /proc says nothing (another OS layout, or another user's process). */
function ownerFromSs(port: number): string | undefined {
  try {
    const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    });
    const m = /users:\(\("([^"]*)",pid=(\d+)/.exec(out);
    return m?.[2] ? describePid(m[2]) : undefined;
  } catch {
    return undefined;
  }
}

/** Who listens on `port`, as "pid N (command line)", when this machine lets us see it. */
export const portOwner = (port: number): string | undefined => ownerFromProc(port) ?? ownerFromSs(port);
