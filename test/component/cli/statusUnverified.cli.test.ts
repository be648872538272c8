import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { baselineMirrorPath, writeBaselineMirror } from '../../../src/core/loop/baselineMirror';
import { runCliInProcess } from '../../support/cli';
import { useWorkspaces, type Workspace } from '../../support/engineHarness';
import type { ClaimBaseline } from '../../../src/core/model/claimBaseline';
import { unverifiedClaimsOf } from '../../../src/core/control/unverifiedClaims';
import { loadSources } from '../../../src/core/sources/plan';

/**
 * Issue 11 C1/C4: `ralph status` reports the items claimed done that no gate verified (against run.json's claim
 * baseline) and does not count them in progress; the answer cache never serves a status from before run.json changed.
 */
const quantum = (passed: string[]) =>
  JSON.stringify(
    {
      project: 'p',
      stories: ['US-001', 'US-002', 'US-003'].map((id, i) => ({
        id,
        title: `Story ${id}`,
        status: passed.includes(id) ? 'passed' : 'pending',
        priority: i + 1,
        dependsOn: [],
      })),
    },
    null,
    2,
  ) + '\n';
const runId = '20261201-000000-dead';
const baseline = (done: string[], o: Partial<ClaimBaseline> = {}): ClaimBaseline => ({
  at: '2026-12-01T00:00:01.000Z',
  source: 'quantum',
  label: 'quantum.json',
  done,
  ...o,
});
/** A run that ended (Ctrl-C twice marks it stopped) with its claims still open, as crash recovery finds it. */
const writeRun = (ws: Workspace, claimBaseline: ClaimBaseline | null) =>
  ws.write(
    `.ralph/runs/${runId}/run.json`,
    JSON.stringify(
      {
        schemaVersion: 1,
        runId,
        pid: 2 ** 22 - 3,
        host: os.hostname(),
        startedAt: '2026-12-01T00:00:00.000Z',
        state: 'stopped',
        iteration: 1,
        currentItem: null,
        completion: { reason: 'INTERRUPTED', at: '2026-12-01T00:01:00.000Z' },
        endState: 'cancelled',
        claimBaseline,
      },
      null,
      2,
    ) + '\n',
  );

/** The next start's crash recovery in this process, with the baseline mirrors of `state` (XDG_STATE_HOME). */
async function recoverWithState(ws: Workspace, state: string) {
  const { recoverCrashedRuns } = await import('../../../src/core/loop/crashRecovery');
  const { availableSources } = await import('../../../src/core/sources/work/workSources');
  const prev = process.env.XDG_STATE_HOME;
  process.env.XDG_STATE_HOME = state;
  try {
    return await recoverCrashedRuns(ws.dir, availableSources({ folder: ws.dir, actor: 't' }), 100);
  } finally {
    if (prev === undefined) delete process.env.XDG_STATE_HOME;
    else process.env.XDG_STATE_HOME = prev;
  }
}

describe('ralph status: unverified claims (issue 11 C1/C4)', () => {
  const make = useWorkspaces();

  it("reports a story claimed passed against the run's baseline and leaves it out of progress (JSON and text)", async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']) });
    writeRun(ws, baseline(['US-001']));
    const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
    assert.deepEqual(j.unverified_claims, [{ source: 'quantum', id: 'US-002', title: 'Story US-002', run: runId }]);
    assert.equal(j.progress, '1/3');
    assert.match(
      (await runCliInProcess(ws.dir, ['status'])).stdout,
      /Progress: 1\/3 \(\+1 claimed done, not verified: US-002\)/,
    );
  });

  it("a person's own `ralph task done` after the baseline is theirs, not a claim", async () => {
    const ws = make({
      'quantum.json': quantum(['US-001', 'US-002']),
      '.ralph/person-done.json': JSON.stringify({ 'quantum:US-002': '2026-12-01T00:00:30.000Z' }),
    });
    writeRun(ws, baseline(['US-001']));
    const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
    assert.deepEqual(j.unverified_claims, []);
    assert.equal(j.progress, '2/3');
  });

  it('a person mark written while an agent ran (agentMarks), or since the running agent started (a crash during it), is a claim', async () => {
    const marks = JSON.stringify({ 'quantum:US-002': '2026-12-01T00:00:30.000Z' });
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-state-'));
    for (const b of [
      baseline(['US-001'], { agentMarks: ['quantum:US-002'] }),
      baseline(['US-001'], { marksAtAgentStart: {} }),
    ]) {
      const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']), '.ralph/person-done.json': marks });
      writeRun(ws, b);
      const j = (await runCliInProcess(ws.dir, ['status', '--json'], { XDG_STATE_HOME: state })).json();
      assert.deepEqual(
        j.unverified_claims,
        [{ source: 'quantum', id: 'US-002', title: 'Story US-002', run: runId }],
        JSON.stringify(b),
      );
      assert.equal(j.progress, '1/3');
      // The next start's crash recovery reads the same rule: put back.
      assert.deepEqual(
        (await recoverWithState(ws, state)).map((r) => r.putBack),
        [['US-002']],
      );
    }
    fs.rmSync(state, { recursive: true, force: true });
  });

  it('the answer cache: a status cached before a run record appeared (or changed) is not served after', async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']) });
    // Inputs older than the cache's racy tick (2 s), so the first answer is stored and the second served.
    await new Promise((r) => setTimeout(r, 2100));
    assert.equal((await runCliInProcess(ws.dir, ['status', '--json'])).json().progress, '2/3');
    assert.equal((await runCliInProcess(ws.dir, ['status', '--json'])).json().progress, '2/3');
    writeRun(ws, baseline(['US-001']));
    assert.equal((await runCliInProcess(ws.dir, ['status', '--json'])).json().progress, '1/3');
    writeRun(ws, null);
    const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
    assert.equal(j.progress, '2/3');
    assert.deepEqual(j.unverified_claims, []);
  });

  it('unverifiedClaimsOf: epics and other checklist files against their baseline fields', async () => {
    const ws = make({
      '.flow/meta.json': '{\n  "schema_version": 2,\n  "next_epic": 2\n}\n',
      '.flow/epics/fn-1.json':
        JSON.stringify({ id: 'fn-1', title: 'Epic', status: 'done', depends_on_epics: [] }, null, 2) + '\n',
      '.flow/tasks/fn-1.1.json':
        JSON.stringify(
          { id: 'fn-1.1', epic: 'fn-1', title: 'First', status: 'done', depends_on: [], priority: null },
          null,
          2,
        ) + '\n',
      'RALPH_TASK.md': '# T\n\n- [x] One\n- [x] Two\n',
    });
    const src = loadSources(ws.dir);
    const got = unverifiedClaimsOf(
      src,
      baseline(['fn-1.1'], {
        source: 'flow-next',
        label: '.flow',
        epics: [],
        checklists: { 'RALPH_TASK.md': ['One #1'] },
      }),
      'r',
    );
    assert.deepEqual(
      got.map((u) => u.id),
      ['fn-1', 'RALPH_TASK.md:4'],
    );
    // A baseline from before the epics and checklists fields: only its own items.
    assert.deepEqual(unverifiedClaimsOf(src, baseline(['fn-1.1'], { source: 'flow-next', label: '.flow' }), 'r'), []);
  });

  it('a story of quantum.json made passed during a checklist run (another kind of source) is an unverified claim (breaker s5 row 05)', async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']), 'RALPH_TASK.md': '# T\n\n- [ ] One\n' });
    writeRun(
      ws,
      baseline([], {
        source: 'checklist',
        label: 'RALPH_TASK.md',
        sources: { quantum: ['US-001'], flow: [], flowEpics: [] },
      }),
    );
    const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
    assert.deepEqual(j.unverified_claims, [{ source: 'quantum', id: 'US-002', title: 'Story US-002', run: runId }]);
  });
});

describe('the claim baseline mirror outside the workspace (issue 11 K2/K3)', function () {
  this.timeout(120_000);
  const make = useWorkspaces();
  let state: string;
  beforeEach(() => {
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-state-'));
  });
  afterEach(() => fs.rmSync(state, { recursive: true, force: true }));

  it('a forged run.json claimBaseline (the agent added its claim to `done`) loses to the mirror: status and the next start', async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']) });
    writeRun(ws, baseline(['US-001', 'US-002']));
    const env = { XDG_STATE_HOME: state };
    await writeBaselineMirror(ws.dir, runId, baseline(['US-001']), env);
    const j = (await runCliInProcess(ws.dir, ['status', '--json'], env)).json();
    assert.deepEqual(
      (j.unverified_claims as { id: string }[]).map((u) => u.id),
      ['US-002'],
    );
    assert.deepEqual(
      (await recoverWithState(ws, state)).map((r) => r.putBack),
      [['US-002']],
    );
    assert.notEqual(
      (JSON.parse(ws.read('quantum.json')) as { stories: { status: string }[] }).stories[1]!.status,
      'passed',
    );
    assert.equal(fs.existsSync(baselineMirrorPath(ws.dir, runId, env)), false, 'the mirror is removed once settled');
  });
});
