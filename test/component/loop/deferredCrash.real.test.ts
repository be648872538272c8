import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ralphRunDir } from '../../../src/core/control/sentinels';
import type { EngineEvent } from '../../../src/core/loop/events';
import { baselineCopyPath, baselineMirrorPath } from '../../../src/core/loop/baselineMirror';
import { cliPath } from '../../support/cli';
import { bash, say, startModelServer, write } from '../../support/modelServer';
import { scriptedClaudeStub } from '../../support/claude';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';
import { waitUntil } from '../../support/processes';
import { readBaselineMirror } from '../../../src/core/loop/baselineMirror';

/*
 * Crash recovery after the lane's deferred writes (decision 0027, its amendment). A SIGKILL of the engine at a chosen line is taken as
 * the files on disk at that line: an engine event is emitted synchronously from the lane's code, so a listener that
 * copies run.json, the mirror and the task file sees exactly what a crash there would leave (the page cache survives
 * a SIGKILL; only the engine's memory is lost). The copies are then put back with a dead engine pid, and the next run's
 * crash recovery reads them.
 */

const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], type: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type);

const stub = { claudePath: scriptedClaudeStub };

interface Story {
  id: string;
  status: string;
  retries?: { attempts: number; failureLog?: { phase: string }[] };
}

/** quantum.json's text with pending stories `ids` (titles "Story <id>", no dependencies), `maxAttempts` each. */
function quantumOf(ids: string[], maxAttempts = 3): string {
  const stories = ids.map((id, i) => ({
    id,
    title: `Story ${id}`,
    status: 'pending',
    priority: i + 1,
    dependsOn: [],
    retries: { attempts: 0, maxAttempts },
  }));
  return JSON.stringify({ project: 'p', stories }, null, 2) + '\n';
}

/** A pid no process has now (a child that has exited). */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' });
  return Number(r.stdout.trim());
}

/** What a crash of run `runId` at this moment leaves: the files a recovery reads (null: absent, or not a file). */
interface AtCrash {
  runId: string;
  files: Record<string, string | null>;
}

/** The files of run `runId` in `ws` as they are now: run.json, both mirror copies, quantum.json, person-done.json. */
function filesAt(ws: Workspace, runId: string): AtCrash {
  const read = (f: string) => (fs.existsSync(f) && fs.statSync(f).isFile() ? fs.readFileSync(f, 'utf8') : null);
  const files = [
    path.join(ralphRunDir(ws.dir, runId), 'run.json'),
    baselineMirrorPath(ws.dir, runId),
    baselineCopyPath(ws.dir, runId),
    ws.file('quantum.json'),
    ws.file('.ralph/person-done.json'),
  ];
  return { runId, files: Object.fromEntries(files.map((f) => [f, read(f)])) };
}

/** The crash: `at`'s files put back as they were (an absent one removed), run.json's engine a pid that is gone. */
function leaveCrashed(at: AtCrash): void {
  for (const [file, text] of Object.entries(at.files)) {
    if (text === null) fs.rmSync(file, { recursive: true, force: true });
    else {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
    }
  }
  const runJson = Object.keys(at.files)[0]!;
  const record = JSON.parse(fs.readFileSync(runJson, 'utf8')) as Record<string, unknown>;
  record.pid = deadPid();
  fs.writeFileSync(runJson, JSON.stringify(record, null, 2) + '\n');
}

describe('crash recovery after deferred lane writes (real engine, stub agent)', function () {
  this.timeout(300_000);
  const make = useWorkspaces();
  let ws: Workspace | undefined;

  // An item is named in run.json before its source marks it in_progress: the verdict before it may still be deferred
  // (timing.betweenIterationsMs 0), and a crash between the next story's `source.start` and its agent's start must
  // make recovery fail the started story, not the one the last gate verified (an attempt charged to the wrong story).
  it("a crash between a story's start and its agent's start fails that story, not the one verified before it", async () => {
    ws = make({ 'quantum.json': quantumOf(['US-001', 'US-002']) });
    const config = { ...stub, gates: { basic: 'true' }, timing: { betweenIterationsMs: 0 } };
    let atCrash: AtCrash | undefined;
    const first = await runEngine(
      ws,
      [
        write(ws.file('one.txt'), '1\n'),
        say('Done. <quantum>STORY_PASSED</quantum>'),
        write(ws.file('two.txt'), '2\n'),
        say('Done. <quantum>STORY_PASSED</quantum>'),
      ],
      {
        config,
        onEvent: (e, engine) => {
          // Emitted after US-002's `source.start` and before its agent's start writes run.json: the crash's moment.
          if (e.type !== 'iterationStarted' || e.item?.id !== 'US-002' || atCrash) return;
          atCrash = filesAt(ws!, engine.runId);
        },
      },
    );
    assert.equal(first.result.state, 'completed', first.lines.join('\n'));
    assert.ok(atCrash, 'the second story started');
    const statusAt = (text: string, id: string) =>
      (JSON.parse(text) as { stories: Story[] }).stories.find((s) => s.id === id)!.status;
    const quantumAt = atCrash.files[ws.file('quantum.json')]!;
    assert.deepEqual(
      [statusAt(quantumAt, 'US-001'), statusAt(quantumAt, 'US-002')],
      ['passed', 'in_progress'],
      'at the crash: US-001 verified, US-002 started',
    );

    // The crash: the files as they were at that moment, the engine gone.
    leaveCrashed(atCrash);

    let afterRecovery: Story[] | undefined;
    const server = await startModelServer([
      write(ws.file('three.txt'), '3\n'),
      say('Done. <quantum>STORY_PASSED</quantum>'),
      write(ws.file('four.txt'), '4\n'),
      say('Done. <quantum>STORY_PASSED</quantum>'),
    ]);
    try {
      const second = await runEngine(ws, [], {
        server,
        config,
        onEvent: (e) => {
          if (e.type === 'iterationStarted' && !afterRecovery)
            afterRecovery = (JSON.parse(ws!.read('quantum.json')) as { stories: Story[] }).stories;
        },
      });
      const crashed = ofType(second.events, 'warning').find((w) =>
        w.message.includes(`run ${atCrash!.runId} had crashed`),
      );
      assert.ok(crashed, second.lines.join('\n'));
      assert.ok(afterRecovery);
      const crashEntries = (id: string) =>
        (afterRecovery!.find((s) => s.id === id)!.retries?.failureLog ?? []).filter((f) => f.phase === 'crash').length;
      assert.match(
        crashed.message,
        /failed US-002\b/,
        `recovery failed the story the crashed run had started: ${crashed.message}`,
      );
      assert.equal(crashEntries('US-002'), 1, 'the started story has its crash entry');
      assert.equal(crashEntries('US-001'), 0, 'the story verified before the crash is not charged a crash');
    } finally {
      await server.close();
    }
  });

  // A child starts only once the mirror (outside the workspace, trusted by recovery over run.json) holds its marks at
  // start: with a mirror still without `marksAtAgentStart`, a person mark the agent forges would read as a person's
  // after a crash. Here the mirror's second copy cannot be written (its path is taken by a folder: a full or read-only
  // state folder does the same); the agent would forge a mark for US-002 and set it passed.
  it("a child does not start when its marks could not be mirrored: a forged mark is not a person's after a crash", async () => {
    ws = make({ 'quantum.json': quantumOf(['US-001', 'US-002']) });
    const config = { ...stub, gates: { basic: 'true' }, containment: 'marker' };
    const script = `const fs = require('fs'); fs.writeFileSync('.' + 'ralph/person-done.json', JSON.stringify({ 'quantum:US-002': new Date().toISOString() }));\n`;
    let atCrash: AtCrash | undefined;
    const first = await runEngine(
      ws,
      [
        write(ws.file('forge.js'), script),
        bash(`node forge.js && node ${cliPath} task done US-002 --force`),
        say('Done. <quantum>STORY_PASSED</quantum>'),
      ],
      {
        config,
        onEvent: (e, engine) => {
          if (e.type === 'iterationStarted' && e.iteration === 1) {
            // The fault, just before the agent's start writes its marks: the first copy of the mirror cannot be written.
            const copy = baselineCopyPath(ws!.dir, engine.runId);
            fs.rmSync(copy, { force: true });
            fs.mkdirSync(path.join(copy, 'taken'), { recursive: true });
          }
          // The agent has forged the mark and set US-002 passed, and still runs: the crash's moment.
          if (e.type === 'agentSignal' && !atCrash) {
            atCrash = filesAt(ws!, engine.runId);
            // A full state folder would have left the copy as it was, the same as the mirror (the copy is written
            // first, and neither write got through): so it is put back, and the fault ends here.
            const copy = baselineCopyPath(ws!.dir, engine.runId);
            atCrash.files[copy] = atCrash.files[baselineMirrorPath(ws!.dir, engine.runId)]!;
            fs.rmSync(copy, { recursive: true, force: true });
          }
        },
      },
    );
    if (ofType(first.events, 'agentStarted').length === 0) {
      // What must hold: the agent did not start, the run failed, nothing it could have claimed is left.
      assert.equal(first.result.state, 'failed', first.lines.join('\n'));
      assert.equal(atCrash, undefined);
      assert.notEqual(JSON.parse(ws.read('quantum.json')).stories[1].status, 'passed');
      return;
    }
    // Else it ran without its marks mirrored: what a crash while it runs leaves.
    assert.ok(atCrash, first.lines.join('\n'));
    const statusOf = (text: string | null, id: string) =>
      (JSON.parse(text!) as { stories: Story[] }).stories.find((s) => s.id === id)!.status;
    assert.equal(statusOf(atCrash.files[ws.file('quantum.json')]!, 'US-002'), 'passed', 'the agent claimed US-002');
    assert.match(atCrash.files[ws.file('.ralph/person-done.json')] ?? '', /quantum:US-002/, 'and forged its mark');

    // The crash: the files as they were at that moment, the engine gone.
    leaveCrashed(atCrash);

    let afterRecovery: Story[] | undefined;
    const server = await startModelServer([say('Nothing to do.')]);
    try {
      const second = await runEngine(ws, [], {
        server,
        config: { ...config, maxIterations: 1 },
        onEvent: (e) => {
          if (e.type === 'iterationStarted' && !afterRecovery)
            afterRecovery = (JSON.parse(ws!.read('quantum.json')) as { stories: Story[] }).stories;
        },
      });
      assert.ok(afterRecovery, second.lines.join('\n'));
      assert.notEqual(
        afterRecovery.find((s) => s.id === 'US-002')!.status,
        'passed',
        `the agent's claim of US-002 was put back by recovery:\n${second.lines.join('\n')}`,
      );
    } finally {
      await server.close();
    }
  });

  // An attempt that ended without a verdict (no claim, a red gate) leaves run.json's `currentItem` set, and crash
  // recovery fails that item (quantumSource.ts `recoverCrashed`) unless a person marked it done since the trusted
  // baseline: with the run paused, a person's `ralph task done` is theirs (personMarks.ts), also after a crash.
  it("a person's mark made during a pause survives a crash during that pause (quantum)", async () => {
    ws = make({ 'quantum.json': quantumOf(['US-001', 'US-002']) });
    let atCrash: AtCrash | undefined;
    let paused: Promise<void> | undefined;
    const first = await runEngine(ws, [say('Looked; nothing done yet.')], {
      config: { ...stub, gates: { basic: 'true' }, timing: { betweenIterationsMs: 50 } },
      onEvent: (e, engine) => {
        const dir = ralphRunDir(ws!.dir, engine.runId);
        if (e.type === 'iterationEnded' && e.iteration === 1) fs.writeFileSync(path.join(dir, 'PAUSE'), '');
        if (e.type !== 'paused' || paused) return;
        // Paused and at rest on disk (state, the mirror without a child's marks): the person marks US-001.
        paused = waitUntil(() => {
          const r = JSON.parse(fs.readFileSync(path.join(dir, 'run.json'), 'utf8')) as { state: string };
          const m = readBaselineMirror(ws!.dir, engine.runId);
          return r.state === 'paused' && !!m && !('marksAtAgentStart' in m);
        })
          .then(() => {
            const env = { ...process.env };
            delete env.RALPH_RUN_ID;
            const done = spawnSync(process.execPath, [cliPath, 'task', 'done', 'US-001'], {
              cwd: ws!.dir,
              env,
              encoding: 'utf8',
            });
            assert.equal(done.status, 0, done.stderr);
            atCrash = filesAt(ws!, engine.runId);
          })
          // Whatever happened above, the run ends (STOP): a failure shows instead of a paused run waiting forever.
          .finally(() => fs.writeFileSync(path.join(dir, 'STOP'), ''));
      },
    });
    await paused;
    assert.ok(atCrash, first.lines.join('\n'));
    const statusOf = (text: string, id: string) =>
      (JSON.parse(text) as { stories: Story[] }).stories.find((s) => s.id === id)!.status;
    assert.equal(statusOf(atCrash.files[ws.file('quantum.json')]!, 'US-001'), 'passed', 'the person marked US-001');
    assert.match(
      atCrash.files[path.join(ralphRunDir(ws.dir, atCrash.runId), 'run.json')]!,
      /"currentItem": \{/,
      'run.json names the item of the attempt before the pause',
    );

    // The crash during the pause: the files as they were, the engine gone.
    leaveCrashed(atCrash);

    let afterRecovery: string | undefined;
    const server = await startModelServer([say('Nothing to do.')]);
    try {
      const second = await runEngine(ws, [], {
        server,
        config: { ...stub, gates: { basic: 'true' }, maxIterations: 1 },
        onEvent: (e) => {
          if (e.type === 'iterationStarted' && afterRecovery === undefined) afterRecovery = ws!.read('quantum.json');
        },
      });
      assert.ok(afterRecovery !== undefined, second.lines.join('\n'));
      assert.equal(
        statusOf(afterRecovery, 'US-001'),
        'passed',
        `the person's mark stayed:\n${second.lines.join('\n')}`,
      );
    } finally {
      await server.close();
    }
  });

  // The verdict carried (the item's end, `currentItem: null`) is written at once, not deferred with its mirror: while
  // run.json named the verified story as current, crash recovery failed it as the crashed run's item
  // (quantumSource.ts `recoverCrashed`: a passed story goes back, an attempt charged) and blocked it at its last attempt.
  it('a crash just after a story was verified does not fail or block it', async () => {
    ws = make({ 'quantum.json': quantumOf(['US-001'], 1) });
    const config = { ...stub, gates: { basic: 'true' } };
    let atCrash: AtCrash | undefined;
    const first = await runEngine(
      ws,
      [write(ws.file('one.txt'), '1\n'), say('Done. <quantum>STORY_PASSED</quantum>')],
      {
        config,
        onEvent: (e, engine) => {
          // Emitted by the verdict's handler after the deferred carry, before any later write: the crash's moment.
          if (e.type !== 'verified' || atCrash) return;
          atCrash = filesAt(ws!, engine.runId);
        },
      },
    );
    assert.equal(first.result.state, 'completed', first.lines.join('\n'));
    assert.ok(atCrash);
    leaveCrashed(atCrash);

    let afterRecovery: Story | undefined;
    const server = await startModelServer([
      write(ws.file('one.txt'), '1\n'),
      say('Done. <quantum>STORY_PASSED</quantum>'),
    ]);
    try {
      const second = await runEngine(ws, [], {
        server,
        config,
        onEvent: (e) => {
          if (e.type === 'runStarted' || e.type === 'iterationStarted')
            afterRecovery ??= (JSON.parse(ws!.read('quantum.json')) as { stories: Story[] }).stories[0];
        },
      });
      const story = (JSON.parse(ws.read('quantum.json')) as { stories: Story[] }).stories[0]!;
      assert.equal(
        (story.retries?.failureLog ?? []).filter((f) => f.phase === 'crash').length,
        0,
        `no crash is charged to the verified story:\n${second.lines.join('\n')}`,
      );
      assert.equal(story.status, 'passed', `verified again by the next run:\n${second.lines.join('\n')}`);
    } finally {
      await server.close();
    }
  });
});
