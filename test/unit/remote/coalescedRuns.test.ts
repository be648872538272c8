import * as assert from 'node:assert/strict';
import { CoalescedRuns } from '../../../src/core/remote/coalescedRuns';

/** A run the test ends by hand: the keys each run got, and a way to end the newest one. */
function harness(fail?: (keys: readonly string[]) => boolean) {
  const runs: string[][] = [];
  const enders: (() => void)[] = [];
  let started: (() => void) | null = null;
  const c = new CoalescedRuns<string>(
    (keys) =>
      new Promise((resolve, reject) => {
        runs.push([...keys]);
        enders.push(() => (fail?.(keys) ? reject(new Error(`failed ${keys.join(' ')}`)) : resolve(keys.join(' '))));
        started?.();
      }),
  );
  /** Resolves when the next run starts. */
  const nextStart = () => new Promise<void>((r) => (started = r));
  return { c, runs, end: (i: number) => enders[i]!(), nextStart };
}

describe('CoalescedRuns: one run at a time over the keys added meanwhile (the lane fetches)', () => {
  const cases: { name: string; before: string[]; during: string[]; runs: string[][] }[] = [
    { name: 'one key: one run of it', before: ['A'], during: [], runs: [['A']] },
    { name: 'keys added in the same tick go in one run', before: ['A', 'B'], during: [], runs: [['A', 'B']] },
    {
      name: 'keys added while a run is under way go together in the next run',
      before: ['A'],
      during: ['B', 'C', 'D'],
      runs: [['A'], ['B', 'C', 'D']],
    },
  ];
  for (const t of cases)
    it(t.name, async () => {
      const h = harness();
      const first = h.nextStart();
      const answers = t.before.map((k) => h.c.add(k));
      await first;
      const second = h.nextStart();
      answers.push(...t.during.map((k) => h.c.add(k)));
      h.end(0);
      if (t.during.length) {
        await second;
        h.end(1);
      }
      const got = await Promise.all(answers);
      assert.deepEqual(h.runs, t.runs);
      // Each key's answer is the answer of the run that took it.
      assert.deepEqual(got, [...t.before.map(() => t.runs[0]!.join(' ')), ...t.during.map(() => t.runs[1]!.join(' '))]);
    });

  it('a run never starts before the one before it ended', async () => {
    const h = harness();
    const first = h.nextStart();
    void h.c.add('A');
    await first;
    const b = h.c.add('B');
    // A settled promise chain gets a few turns; the second run must still wait for the first to end.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    assert.deepEqual(h.runs, [['A']]);
    const second = h.nextStart();
    h.end(0);
    await second;
    h.end(1);
    assert.equal(await b, 'B');
  });

  it('a failed run answers each of its keys with the Error (a value, not thrown); the next run still runs', async () => {
    const h = harness((keys) => keys.includes('B'));
    const first = h.nextStart();
    const a = h.c.add('A');
    await first;
    const second = h.nextStart();
    const b = h.c.add('B');
    const c = h.c.add('C');
    h.end(0);
    await second;
    h.end(1);
    assert.equal(await a, 'A');
    const [eb, ec] = await Promise.all([b, c]);
    assert.ok(eb instanceof Error && ec instanceof Error);
    assert.equal(eb.message, 'failed B C');
    const third = h.nextStart();
    const d = h.c.add('D');
    await third;
    h.end(2);
    assert.equal(await d, 'D');
  });
});
