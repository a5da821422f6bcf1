import type { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { watchFetchLoops } from '../src/fetch-watchdog.js';

/** A stand-in for BullMQ's Worker: only its pending wait for the next job matters here. */
const fake = (waiting: Promise<number> | null) => ({ waiting }) as unknown as Worker;
const pending = () => new Promise<number>(() => {});

function watch(workers: Worker[], redisReady = () => true) {
  let clock = 0;
  const wedged: number[] = [];
  const dog = watchFetchLoops({
    workers,
    redisReady: () => redisReady(),
    onWedged: (i) => wedged.push(i),
    wedgedAfterMs: 30,
    now: () => clock,
  });
  return {
    wedged,
    at(ms: number) {
      clock = ms;
      dog.check();
    },
    stop: dog.stop,
  };
}

describe('the fetch-loop watchdog', () => {
  it('flags a worker whose one wait for a job outlasts the bound, once, and not its neighbours', () => {
    const stuck = pending();
    const workers = [fake(null), fake(stuck)];
    const w = watch(workers);
    w.at(0);
    w.at(20);
    expect(w.wedged).toEqual([]);
    w.at(31);
    expect(w.wedged).toEqual([1]);
    w.at(40); // flagged once; a replacement's wait starts its own count
    expect(w.wedged).toEqual([1]);
    w.stop();
  });

  it('leaves alone a loop that keeps cycling (a new wait each time) or is busy (no wait)', () => {
    const workers = [fake(pending()), fake(null)];
    const w = watch(workers);
    for (let t = 0; t <= 100; t += 10) {
      (workers[0] as unknown as { waiting: Promise<number> }).waiting = pending();
      w.at(t);
    }
    expect(w.wedged).toEqual([]);
    w.stop();
  });

  it('does not count a wait while Redis is away (BullMQ resumes on its own), only after', () => {
    let up = false;
    const w = watch([fake(pending())], () => up);
    for (let t = 0; t <= 100; t += 10) w.at(t);
    expect(w.wedged).toEqual([]);
    up = true;
    w.at(110);
    w.at(130);
    expect(w.wedged).toEqual([]);
    w.at(141);
    expect(w.wedged).toEqual([0]);
    w.stop();
  });
});
