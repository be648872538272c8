import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { opencodeAdapter } from '../../../src/core/agents/opencode';
import { type IterationHandle, processGroupAlive, spawnIteration } from '../../../src/core/agents/spawn';
import type { AgentEvent } from '../../../src/core/stream/events';
import type { EngineEvent } from '../../../src/core/loop/events';
import { runEngine, useWorkspaces } from '../../support/engineHarness';
import { streamFixture } from '../../support/fixtures';
import { replayRecorded } from '../../support/recordedStreams';
import { makeTempDir } from '../../support/tempFolder';

/**
 * An opencode that keeps running after its turn's final event (its session summary and disposal, or for good as some
 * versions and plugins do): a stub printing lines of a recorded opencode stream, then holding on until the test
 * creates a release file, then printing `LATE_LINE` and exiting 0 by itself. The order of what happens, not the time
 * it takes, shows whether ralph ended it: ended after its final event, the stub never reaches its late line.
 */
const RECORDED = streamFixture('opencode', 'recorded', 'tool-shell-success.jsonl');
const LATE_LINE = JSON.stringify({ type: 'text', timestamp: 1, sessionID: 'ses_late', part: { text: 'late' } });
const STUB = `#!/bin/bash
cat "$STUB_LINES"
while [ ! -e "$STUB_RELEASE" ]; do sleep 0.05; done
printf '%s\\n' '${LATE_LINE}'
exit 0
`;

describe('opencode still running after its final event (a stub replaying its recorded stream)', function () {
  this.timeout(60_000);
  const make = useWorkspaces();
  let dir = '';
  beforeEach(() => {
    dir = makeTempDir('ralph-opencode-exit-');
    fs.writeFileSync(path.join(dir, 'opencode'), STUB, { mode: 0o755 });
  });
  afterEach(() => {
    fs.writeFileSync(path.join(dir, 'release'), '');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the stub printing `lines`, with every event and stdout byte kept in order. */
  function start(lines: string[], afterTurnGraceMs?: number | null) {
    fs.writeFileSync(path.join(dir, 'lines.jsonl'), lines.map((l) => `${l}\n`).join(''));
    const order: string[] = [];
    const events: AgentEvent[] = [];
    let stdout = '';
    const waits: { n: number; resolve: () => void }[] = [];
    const onStdout = (c: Buffer) => {
      stdout += c.toString();
      const n = stdout.split('\n').length - 1;
      for (const w of waits.filter((w) => n >= w.n)) w.resolve();
    };
    const handle: IterationHandle = spawnIteration(
      opencodeAdapter,
      {
        prompt: 'Do the task.',
        cwd: dir,
        binary: path.join(dir, 'opencode'),
        env: { STUB_LINES: path.join(dir, 'lines.jsonl'), STUB_RELEASE: path.join(dir, 'release') },
      },
      { onStdout, ...(afterTurnGraceMs !== undefined ? { afterTurnGraceMs } : {}) },
    );
    handle.onEvent((e) => {
      events.push(e);
      order.push(e.type);
    });
    const done = handle.done.then((exit) => {
      order.push('exit');
      return exit;
    });
    /** Resolves once the stub has printed `n` lines. */
    const printed = (n: number) => new Promise<void>((resolve) => waits.push({ n, resolve }));
    return { handle, order, events, done, printed, stdout: () => stdout };
  }
  const release = () => fs.writeFileSync(path.join(dir, 'release'), '');
  const recorded = fs.readFileSync(RECORDED, 'utf8').split('\n').filter(Boolean);

  it("is ended after its final event (the adapter's grace), before its release: a normal end with the turn's outcome and usage", async () => {
    const run = start(recorded);
    const exit = await run.done;
    release();
    // The final event came first, then the end; nothing after it, and the late line never printed.
    assert.deepEqual(run.order.slice(-2), ['result', 'exit']);
    assert.doesNotMatch(run.stdout(), /ses_late/);
    assert.equal(exit.endedAfterTurn, true);
    assert.equal(exit.killedBy, null, 'not a kill');
    assert.equal(exit.signal, 'SIGTERM');
    assert.equal(exit.exitCode, null);
    assert.equal(processGroupAlive(run.handle.pid!), false, 'nothing left running');
    // The turn as the stream gave it: the same outcome, ledger and signals as the recorded stream replayed.
    const replay = replayRecorded(opencodeAdapter, 'tool-shell-success.jsonl');
    assert.equal(exit.outcome.kind, 'success');
    assert.deepEqual(exit.outcome, replay.summary.outcome);
    assert.deepEqual(exit.ledger.tokens, replay.summary.tokens);
    assert.deepEqual(exit.summary.signals, replay.summary.signals);
    assert.deepEqual(
      run.events.map((e) => e.type),
      replay.events.map((e) => e.type),
    );
  });

  it('a turn without its final event is left to exit by itself, as before (grace 0)', async () => {
    // Only the first step: the tool call, then the step that goes on with the tool's result.
    const toolStep = recorded.slice(0, 3);
    assert.match(toolStep[2]!, /"reason":"tool-calls"/);
    const run = start(toolStep, 0);
    await run.printed(toolStep.length);
    release();
    const exit = await run.done;
    assert.match(run.stdout(), /ses_late/, 'it ran until released');
    assert.deepEqual([exit.endedAfterTurn, exit.killedBy, exit.exitCode, exit.signal], [false, null, 0, null]);
    assert.equal(exit.outcome.kind, 'noResult');
  });

  it('output after the final event (opencode went on with another step): not ended for it (grace 0)', async () => {
    const [nextStep] = recorded.filter((l) => l.includes('"type":"step_start"'));
    const run = start([...recorded, nextStep!], 0);
    await run.printed(recorded.length + 1);
    release();
    const exit = await run.done;
    assert.match(run.stdout(), /ses_late/, 'it ran until released');
    assert.deepEqual([exit.endedAfterTurn, exit.killedBy, exit.exitCode], [false, null, 0]);
    assert.equal(exit.outcome.kind, 'success');
  });

  it('through the loop engine: the iteration ends as the turn it printed (complete, verified), the run log says ralph ended it', async () => {
    const ws = make({ 'RALPH_TASK.md': '# Hello\n\n- [ ] Say hello\n' });
    // The turn ticks the box (as its shell call would), prints the recorded turn, then holds on.
    fs.writeFileSync(path.join(dir, 'lines.jsonl'), recorded.map((l) => `${l}\n`).join(''));
    fs.writeFileSync(
      path.join(dir, 'opencode'),
      STUB.replace('cat "$STUB_LINES"', `sed -i 's/- \\[ \\] Say/- [x] Say/' RALPH_TASK.md\ncat "$STUB_LINES"`),
      { mode: 0o755 },
    );
    const r = await runEngine(ws, [], {
      config: { agent: 'opencode', opencodePath: path.join(dir, 'opencode'), gates: { basic: 'true' } },
      env: { STUB_LINES: path.join(dir, 'lines.jsonl'), STUB_RELEASE: path.join(dir, 'release') },
    });
    const log = r.lines.join('\n');
    const of = <T extends EngineEvent['type']>(t: T) =>
      r.events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === t);
    assert.equal(r.result.state, 'completed', log);
    assert.deepEqual(
      of('iterationEnded').map((e) => e.ending),
      ['complete'],
      log,
    );
    assert.equal(of('verified').length, 1, log);
    assert.match(log, /iteration 1: opencode was still running 3 s after its turn's final event: ended it/);
    // The turn's usage, as its stream gave it (two steps of 1000 uncached + 200 cached input, 50 output).
    assert.deepEqual(of('iterationEnded')[0]!.totals.tokens, {
      input: 2000,
      output: 100,
      cacheRead: 400,
      cacheCreation: 0,
    });
    for (const e of of('agentStarted')) assert.equal(processGroupAlive(e.pid!), false, 'nothing left running');
    assert.equal(fs.existsSync(path.join(dir, 'release')), false, 'ended before its release');
  });
});
