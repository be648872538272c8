import * as assert from 'node:assert/strict';
import { Throttle, type ThrottleClock } from '../../../src/extension/throttle';

/** A clock tests move by hand. */
export class ManualClock implements ThrottleClock {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 1;
  now(): number { return this.t; }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void { this.timers = this.timers.filter((x) => x.id !== h); }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
  get pending(): number { return this.timers.length; }
}

describe('Throttle', () => {
  it('runs the first request at once', () => {
    const clock = new ManualClock();
    let calls = 0;
    new Throttle(() => calls++, 250, clock).request();
    assert.equal(calls, 1);
  });
  it('collapses a burst into one trailing call at the end of the interval', () => {
    const clock = new ManualClock();
    let calls = 0;
    const t = new Throttle(() => calls++, 250, clock);
    t.request();
    for (let i = 0; i < 1000; i++) { clock.advance(0.1); t.request(); }
    assert.equal(calls, 1);
    clock.advance(250);
    assert.equal(calls, 2, 'the last state is shown');
  });
  it('calls at most 4 times a second under a steady stream of requests', () => {
    const clock = new ManualClock();
    let calls = 0;
    const t = new Throttle(() => calls++, 250, clock);
    for (let ms = 0; ms < 10_000; ms++) { t.request(); clock.advance(1); }
    assert.ok(calls <= 41, `${calls} calls in 10 s`);
    assert.ok(calls >= 39, `${calls} calls in 10 s: still updating`);
  });
  it('flush runs a pending call now; dispose drops it and clears the timer', () => {
    const clock = new ManualClock();
    let calls = 0;
    const t = new Throttle(() => calls++, 250, clock);
    t.request(); t.request();
    t.flush();
    assert.equal(calls, 2);
    t.request();
    assert.equal(clock.pending, 1);
    t.dispose();
    assert.equal(clock.pending, 0);
    clock.advance(1000);
    assert.equal(calls, 2);
  });
});
