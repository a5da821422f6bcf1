import { BulkheadFullError } from '../../shared/errors.js';

/**
 * Bounded concurrency with a bounded wait, per dependency and process. Hand-written
 * because the usual limiters (p-limit, p-queue) queue without a wait deadline, and a
 * step that waits forever holds its job lock for nothing: better to fail fast and let
 * the queue retry the step later.
 */
export class Bulkhead {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly name: string,
    private readonly maxConcurrent: number,
    private readonly maxWaitMs: number,
    private readonly onChange: (inFlight: number, rejected: boolean) => void = () => {},
  ) {}

  get inFlight() {
    return this.active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.active < this.maxConcurrent) {
      this.active++;
      this.onChange(this.active, false);
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(grant), 1);
        this.onChange(this.active, true);
        reject(new BulkheadFullError(this.name, 'process'));
      }, this.maxWaitMs);
      this.waiting.push(grant);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.active--;
    this.onChange(this.active, false);
  }
}
