import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isConnectionError, RedisOutages } from '../src/adapters/redis/redis-outages.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });

function setup() {
  const lines: Array<Record<string, unknown>> = [];
  const out = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  let now = 0;
  const outages = new RedisOutages(pino({ level: 'debug' }, out), () => now);
  const connection = Object.assign(new EventEmitter(), { status: 'ready' });
  outages.watch('queues', connection);
  return {
    lines,
    outages,
    connection,
    at(ms: number) {
      now = ms;
    },
  };
}

describe('a Redis outage in the log', () => {
  it('is one line when a connection goes away, reminders at growing intervals, and one line when it is back', () => {
    const t = setup();
    t.connection.status = 'reconnecting';
    for (let ms = 0; ms < 9_000; ms += 50) {
      t.at(ms);
      t.connection.emit('error', refused);
    }
    expect(t.lines).toEqual([
      expect.objectContaining({
        level: 40,
        redis: 'queues',
        err: refused.message,
        msg: 'Redis connection "queues" lost: reconnecting with backoff',
      }),
    ]);
    for (let ms = 9_000; ms < 40_000; ms += 50) {
      t.at(ms);
      t.connection.emit('error', refused);
    }
    // Reminders 10 s after the first line, then 20 s after that.
    expect(t.lines.slice(1).map((l) => [l.msg, l.downMs])).toEqual([
      ['Redis connection "queues" still down: reconnecting with backoff', 10_000],
      ['Redis connection "queues" still down: reconnecting with backoff', 30_000],
    ]);
    t.at(41_000);
    t.connection.status = 'ready';
    t.connection.emit('ready');
    expect(t.lines.at(-1)).toMatchObject({
      level: 30,
      redis: 'queues',
      downMs: 41_000,
      errors: 800,
      msg: 'Redis connection "queues" is back',
    });
    expect(t.outages.isDown('queues')).toBe(false);
  });

  it("counts a queue's or worker's connection errors into the outage of its connection", () => {
    const t = setup();
    t.connection.status = 'reconnecting';
    t.connection.emit('error', refused);
    for (let i = 0; i < 100; i++) t.outages.error('queues', new Error('Connection is closed.'), 'worker error', { shard: 0 });
    expect(t.lines).toHaveLength(1);
    t.connection.emit('ready');
    expect(t.lines.at(-1)).toMatchObject({ errors: 101 });
  });

  it('logs any other error as it is, and a stray reconnect of a duplicate connection at debug', () => {
    const t = setup();
    t.outages.error('queues', new Error('ERR unknown command'), 'worker error', { shard: 2 });
    t.outages.error('queues', new Error('Connection is closed.'), 'worker error', { shard: 2 });
    expect(t.lines).toEqual([
      expect.objectContaining({ level: 40, shard: 2, err: 'ERR unknown command', msg: 'worker error' }),
      expect.objectContaining({ level: 20, shard: 2, redis: 'queues', msg: 'worker error' }),
    ]);
    expect(t.outages.isDown('queues')).toBe(false);
  });

  it('tells connection errors from command errors', () => {
    expect(isConnectionError(refused)).toBe(true);
    expect(isConnectionError(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(true);
    expect(isConnectionError(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isConnectionError(undefined)).toBe(false);
  });
});
