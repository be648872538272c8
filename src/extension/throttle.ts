/** Timers a {@link Throttle} uses; injectable so tests drive time by hand. */
export interface ThrottleClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: ThrottleClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * Calls `fn` at most once per `intervalMs` (ms): the first request runs at once (so a run starting shows at once), a
 * burst of later requests collapses into one trailing call at the end of the interval, so the last state is always
 * shown. `intervalMs` 250 = at most 4 calls a second (the gauge's bound, vscode-conventions.md §2.3). Owns its timer:
 * `dispose` clears it and drops a pending call.
 */
export class Throttle {
  private last = -Infinity;
  private timer: unknown;
  private disposed = false;

  constructor(
    private readonly fn: () => void,
    private readonly intervalMs: number,
    private readonly clock: ThrottleClock = systemClock,
  ) {}

  /** Asks for a call; runs `fn` now or schedules it for the end of the current interval. */
  request(): void {
    if (this.disposed || this.timer !== undefined) return;
    const wait = this.last + this.intervalMs - this.clock.now();
    if (wait <= 0) this.run();
    else
      this.timer = this.clock.setTimeout(() => {
        this.timer = undefined;
        this.run();
      }, wait);
  }

  /** Runs a pending call now (e.g. before a state that must show at once, such as a run's end). */
  flush(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.run();
  }

  private run(): void {
    if (this.disposed) return;
    this.last = this.clock.now();
    this.fn();
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
