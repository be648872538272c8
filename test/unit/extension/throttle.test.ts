import * as assert from 'node:assert/strict';
import { Throttle } from '../../../src/extension/throttle';
import { ManualClock } from '../../support/storeHarness';

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
    for (let i = 0; i < 1000; i++) {
      clock.advance(0.1);
      t.request();
    }
    assert.equal(calls, 1);
    clock.advance(250);
    assert.equal(calls, 2, 'the last state is shown');
  });
  it('calls at most 4 times a second under a steady stream of requests', () => {
    const clock = new ManualClock();
    let calls = 0;
    const t = new Throttle(() => calls++, 250, clock);
    for (let ms = 0; ms < 10_000; ms++) {
      t.request();
      clock.advance(1);
    }
    assert.ok(calls <= 41, `${calls} calls in 10 s`);
    assert.ok(calls >= 39, `${calls} calls in 10 s: still updating`);
  });
  it('flush runs a pending call now; dispose drops it and clears the timer', () => {
    const clock = new ManualClock();
    let calls = 0;
    const t = new Throttle(() => calls++, 250, clock);
    t.request();
    t.request();
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
