import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  LM_TOOL_NAMES,
  decideControl,
  decideReset,
  decideStart,
  planReport,
  resolveToolFolder,
  statusReport,
  summaryLine,
  type StartFacts,
} from '../../../src/core/control/lmTools';
import { buildStatus, type StatusRun } from '../../../src/core/control/status';
import { emptyRunView } from '../../../src/core/control/runView';
import type { ItemStatus, PlanItem, PlanSnapshot } from '../../../src/core/model/plan';
import { repoRoot } from '../../support/repoRoot';
import { makeTempDir } from '../../support/tempFolder';

function item(id: string, status: ItemStatus, dependsOn: string[] = [], extra: Partial<PlanItem> = {}): PlanItem {
  return {
    source: 'quantum',
    kind: 'story',
    id,
    rootId: 'quantum.json',
    title: `Story ${id}`,
    status,
    rawStatus: status === 'todo' ? 'pending' : status === 'done' ? 'passed' : status,
    dependsOn,
    file: 'quantum.json',
    ...extra,
  };
}

const plan: PlanSnapshot = {
  folder: '/ws',
  problems: [{ file: 'RALPH_TASK.md', line: 3, column: 1, message: 'bad box' }],
  cycles: [],
  roots: [
    {
      source: 'quantum',
      kind: 'project',
      id: 'quantum.json',
      title: 'p',
      status: 'open',
      dependsOn: [],
      file: 'quantum.json',
      itemIds: ['US-1', 'US-2', 'US-3', 'US-4', 'US-5'],
    },
  ],
  items: [
    item('US-1', 'done'),
    item('US-2', 'todo', ['US-1'], { attempts: 1, maxAttempts: 3 }),
    item('US-3', 'todo', ['US-2']),
    item('US-4', 'in_progress', [], { assignee: 'ann' }),
    item('US-5', 'blocked', ['US-1'], { reason: 'no API key' }),
  ],
};

describe('Language Model Tools: what each answers and asks (core/control/lmTools.ts)', () => {
  it('names the six tools package.json declares', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
    const declared = (manifest.contributes.languageModelTools as { name: string }[]).map((t) => t.name);
    assert.deepEqual(declared, [...LM_TOOL_NAMES]);
  });

  describe('ralph_plan', () => {
    const r = planReport(plan);
    it('lists the ready items with their dependencies, source and attempts', () => {
      assert.deepEqual(r.ready, [
        {
          id: 'US-2',
          title: 'Story US-2',
          source: 'quantum',
          status: 'todo',
          dependsOn: ['US-1'],
          file: 'quantum.json',
          attempts: '1 of 3',
        },
      ]);
    });
    it('lists what the others wait on, with each dependency status, and why', () => {
      assert.deepEqual(
        r.waiting.map((w) => ({ id: w.id, waitsOn: w.waitsOn })),
        [
          { id: 'US-3', waitsOn: [{ id: 'US-2', status: 'pending' }] },
          { id: 'US-5', waitsOn: [] },
        ],
      );
      assert.match(r.waiting[1]!.why, /blocked: no API key/);
    });
    it('counts progress over every item and names items in progress, problems at file:line:column', () => {
      assert.deepEqual(r.progress, { done: 1, total: 5 });
      assert.deepEqual(r.inProgress, [{ id: 'US-4', title: 'Story US-4', source: 'quantum', assignee: 'ann' }]);
      assert.deepEqual(r.problems, ['RALPH_TASK.md:3:1: bad box']);
      assert.equal(summaryLine('ralph_plan', r), 'Ralph plan of /ws: 1/5 done, 1 ready, 2 waiting, 1 in progress.');
    });
    it('caps each list, never the counts', () => {
      const big: PlanSnapshot = { ...plan, items: Array.from({ length: 120 }, (_, i) => item(`S-${i}`, 'todo')) };
      const capped = planReport(big, 50);
      assert.equal(capped.ready.length, 50);
      assert.deepEqual(capped.progress, { done: 0, total: 120 });
    });
  });

  describe('ralph_status', () => {
    it("reports a folder's progress and no run from the status snapshot", () => {
      const dir = makeTempDir('ralph-lm-status-');
      fs.writeFileSync(
        path.join(dir, 'quantum.json'),
        JSON.stringify({
          stories: [
            { id: 'US-1', status: 'passed' },
            { id: 'US-2', dependsOn: ['US-1'] },
          ],
        }),
      );
      const r = statusReport(dir, buildStatus(dir));
      assert.equal(r.progress, '1/2');
      assert.equal(r.stories.passed, 1);
      assert.deepEqual(r.runs, []);
      assert.equal(r.lastRun, null);
      assert.equal(summaryLine('ralph_status', r), `Ralph status of ${dir}: 1/2 done; no active run.`);
    });
    it('shows an active run in short: state line, item, gates, questions, cost to 4 decimals', () => {
      const view = {
        ...emptyRunView('r-1', 'ralph'),
        state: 'running' as const,
        stateText: 'running',
        progress: { done: 1, total: 3 },
        gates: [
          {
            tier: 'basic' as const,
            command: 'npm test',
            running: false,
            passed: true,
            exitCode: 0,
            durationMs: 1,
            logPath: null,
            failingLines: [],
            at: null,
          },
        ],
      };
      view.cost = { ...view.cost, runUsd: 0.123456 };
      const run = {
        id: 'r-1',
        iteration: 2,
        current_item: { source: 'quantum', id: 'US-2', title: 't' },
        view,
      } as unknown as StatusRun;
      const dir = makeTempDir('ralph-lm-status-');
      const snap = { ...buildStatus(dir), runs: [run] };
      const r = statusReport(dir, snap);
      assert.deepEqual(r.runs[0], {
        id: 'r-1',
        state: 'running',
        stateText: 'running',
        item: 'US-2',
        iteration: 2,
        progress: '1/3',
        costUsd: 0.1235,
        pauseRequested: false,
        stopRequested: false,
        gates: [{ tier: 'basic', passed: true }],
        questions: [],
      });
      assert.match(summaryLine('ralph_status', r), /run r-1 running/);
    });
  });

  describe('the folder a tool acts on', () => {
    const one = [{ path: '/a', name: 'a' }];
    const two = [...one, { path: '/b', name: 'b' }];
    const table: [string | undefined, { path: string; name: string }[], string][] = [
      [undefined, one, 'folder /a'],
      ['b', two, 'folder /b'],
      ['/b', two, 'folder /b'],
      [
        undefined,
        two,
        'refusal This workspace has several folders: call the tool again with `folder` set to one of /a, /b.',
      ],
      ['/c', two, 'refusal "/c" is not a folder of this workspace (folders: /a, /b).'],
      [undefined, [], 'refusal No folder is open in this window.'],
    ];
    for (const [named, folders, want] of table)
      it(`${named ?? '(none)'} of ${folders.length} folder(s) → ${want}`, () => {
        const r = resolveToolFolder(named, folders);
        assert.equal('folder' in r ? `folder ${r.folder}` : `refusal ${r.refusal}`, want);
      });
  });

  describe('ralph_start', () => {
    const facts = (f: Partial<StartFacts> = {}): StartFacts => ({
      plan,
      activeRun: null,
      sources: ['quantum'],
      trusted: true,
      ...f,
    });
    it('confirms a run on the only source, naming the folder, what is left and that the agent acts unattended', () => {
      const d = decideStart({}, '/ws', facts());
      assert.ok(d.ok);
      assert.deepEqual(d.args, { folder: '/ws', source: 'quantum' });
      assert.equal(d.title, 'Start a Ralph loop?');
      assert.match(d.message, /unattended in \/ws, on quantum/);
      assert.match(d.message, /\(4 not done\)/);
    });
    it('starts at a ready item, taking its source', () => {
      const d = decideStart({ item: 'US-2' }, '/ws', facts({ sources: ['quantum', 'RALPH_TASK.md'] }));
      assert.ok(d.ok);
      assert.deepEqual(d.args, { folder: '/ws', source: 'quantum', item: 'US-2' });
      assert.match(d.invocation, /beginning with US-2/);
    });
    const refusals: [string, Parameters<typeof decideStart>[0], Partial<StartFacts>, RegExp][] = [
      ['in Restricted Mode', {}, { trusted: false }, /Restricted Mode/],
      ['with a run active', {}, { activeRun: { id: 'r-9', stateText: 'paused' } }, /already active .*r-9 \(paused\)/],
      ['without a source', {}, { sources: [] }, /No task source .*New Plan/],
      [
        'with several sources and none named',
        {},
        { sources: ['quantum', 'RALPH_TASK.md'] },
        /several task sources \(quantum, RALPH_TASK\.md\)/,
      ],
      ['with a source the folder lacks', { source: 'flow' }, {}, /No task source "flow"/],
      [
        'at an item that waits, offering the next ready one',
        { item: 'US-3' },
        {},
        /US-3 cannot start now: US-3 waits on US-2 \(pending\)\. The next ready item of its source is US-2\./,
      ],
    ];
    for (const [name, input, f, want] of refusals)
      it(`refuses, asking nothing, ${name}`, () => {
        const d = decideStart(input, '/ws', facts(f));
        assert.equal(d.ok, false);
        assert.match((d as { refusal: string }).refusal, want);
      });
  });

  describe('ralph_pause and ralph_stop', () => {
    const active = { id: 'r-1', stateText: 'running', paused: false };
    it('confirm for the active run, after its iteration', () => {
      const p = decideControl('pause', '/ws', active);
      assert.ok(p.ok);
      assert.equal(p.title, 'Pause the Ralph run?');
      assert.match(p.message, /r-1 \(running\) will pause after its current iteration/);
      const s = decideControl('stop', '/ws', active);
      assert.ok(s.ok);
      assert.equal(s.title, 'Stop the Ralph run?');
    });
    it('refuse without an active run, and pausing a paused run', () => {
      assert.deepEqual(decideControl('stop', '/ws', null), { ok: false, refusal: 'No active Ralph run in /ws.' });
      const d = decideControl('pause', '/ws', { ...active, paused: true });
      assert.equal(d.ok, false);
      assert.match((d as { refusal: string }).refusal, /already paused/);
    });
  });

  describe('ralph_reset', () => {
    it('names every item that goes back with cascade, and the dependents it leaves without', () => {
      const withCascade = decideReset({ id: 'US-1', cascade: true }, '/ws', plan);
      assert.ok(withCascade.ok);
      assert.deepEqual(withCascade.args, { folder: '/ws', id: 'US-1', cascade: true });
      assert.match(
        withCascade.message,
        /US-1 \(Story US-1, passed\) goes back to pending in \/ws\. Its dependents US-5 go back too\./,
      );
      const alone = decideReset({ id: 'US-1' }, '/ws', plan);
      assert.ok(alone.ok);
      assert.equal(alone.args.cascade, false);
      assert.match(alone.message, /dependents \(US-5\) are left as they are/);
    });
    it('refuses an item in progress or to do, asking nothing', () => {
      const d = decideReset({ id: 'US-4' }, '/ws', plan);
      assert.equal(d.ok, false);
      assert.match((d as { refusal: string }).refusal, /US-4 cannot be reset: US-4 is in progress/);
      assert.equal(decideReset({ id: 'US-2' }, '/ws', plan).ok, false);
    });
  });
});
