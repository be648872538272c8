import * as assert from 'node:assert/strict';
import type { LogKind, LogLine } from '../../../src/protocol/dashboard';
import { allKinds, filterFromState, matchesFilter, toggleKind } from '../../../webview/model/filters';
import { LogBuffer } from '../../../webview/model/logBuffer';

const line = (n: number, kind: LogKind = 'loop', text = `line ${n}`): LogLine => ({ n, at: n, kind, text });
const lines = (from: number, to: number, kind: LogKind = 'loop') =>
  Array.from({ length: to - from + 1 }, (_, i) => line(from + i, kind));
const view = (b: LogBuffer) => Array.from({ length: b.viewSize }, (_, i) => b.viewLine(i)!.n);

describe('the page log buffer', () => {
  it('holds lines in order until it is full', () => {
    const b = new LogBuffer(5, allKinds());
    b.append(lines(1, 3));
    assert.deepEqual(view(b), [1, 2, 3]);
    assert.equal(b.size, 3);
    assert.equal(b.dropped, 0);
  });

  it('keeps only the newest `capacity` lines and counts the dropped ones', () => {
    const b = new LogBuffer(5, allKinds());
    b.append(lines(1, 4));
    b.append(lines(5, 12));
    assert.deepEqual(view(b), [8, 9, 10, 11, 12]);
    assert.deepEqual(
      b.lines().map((l) => l.n),
      [8, 9, 10, 11, 12],
    );
    assert.equal(b.dropped, 7);
  });

  it('stays bounded over a million lines appended in batches of 1,000', () => {
    const b = new LogBuffer(2_000, allKinds());
    for (let k = 0; k < 1_000; k++) b.append(lines(k * 1_000 + 1, (k + 1) * 1_000));
    assert.equal(b.size, 2_000);
    assert.equal(b.viewSize, 2_000);
    assert.equal(b.viewLine(0)!.n, 998_001);
    assert.equal(b.viewLine(1_999)!.n, 1_000_000);
    // The filtered view's index array is compacted: it never holds more than about two capacities.
    assert.ok((b as unknown as { matches: number[] }).matches.length <= 4_000);
  });

  it('shows only the lines that pass the filter, and keeps filtering lines appended later', () => {
    const b = new LogBuffer(10, { ...allKinds(), text: 'gate' });
    b.append([line(1, 'loop', 'start'), line(2, 'gate', 'GATE basic'), line(3, 'loop', 'gate passed')]);
    assert.deepEqual(view(b), [2, 3]);
    b.setFilter(toggleKind(allKinds(), 'loop'));
    assert.deepEqual(view(b), [2]);
    b.append([line(4, 'tokens'), line(5, 'loop')]);
    assert.deepEqual(view(b), [2, 4]);
  });

  it('drops filtered lines that leave the buffer', () => {
    const b = new LogBuffer(3, toggleKind(allKinds(), 'loop'));
    b.append([line(1, 'error'), line(2, 'loop'), line(3, 'loop'), line(4, 'loop')]);
    assert.deepEqual(view(b), []);
  });

  it('starts over from a snapshot', () => {
    const b = new LogBuffer(3, allKinds());
    b.append(lines(1, 5));
    b.reset(lines(100, 101));
    assert.deepEqual(view(b), [100, 101]);
    assert.equal(b.dropped, 0);
  });

  it('refuses a capacity that is not a positive integer', () => {
    assert.throws(() => new LogBuffer(0, allKinds()), /positive integer/);
  });
});

describe('the log filter', () => {
  it('matches text case-insensitively within the shown kinds', () => {
    assert.equal(matchesFilter(line(1, 'gate', 'GATE end exit=1'), { ...allKinds(), text: 'exit=1' }), true);
    assert.equal(matchesFilter(line(1, 'gate', 'GATE end'), { ...allKinds(), text: 'gate END' }), true);
    assert.equal(matchesFilter(line(1, 'gate', 'GATE end'), toggleKind(allKinds(), 'gate')), false);
  });

  it('reads a saved filter and ignores what is not one', () => {
    assert.deepEqual(filterFromState(undefined), allKinds());
    assert.deepEqual(filterFromState({ kinds: { tokens: false, bogus: true }, text: 'T1' }), {
      ...toggleKind(allKinds(), 'tokens'),
      text: 'T1',
    });
    assert.deepEqual(filterFromState({ kinds: { loop: 'no' }, text: 7 }), allKinds());
  });
});
