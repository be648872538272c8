import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resetItem, staleStories, startItem } from '../../../src/core/sources/operations';
import { loadPlan } from '../../../src/core/sources/plan';
import { corpusFiles, describeCorpus } from '../../support/corpus';
import { describeSchemaAndByteIdentity, diffLines, schemaFor } from '../../support/jsonFiles';
import { tempWorkspace, type TempWorkspace } from '../../support/workspace';

const NOW = Date.UTC(2026, 8, 1, 0, 0, 0);

describeCorpus('corpus: real flow-next and quantum-loop files', (corpus) => {
  const files = ['flow-next', 'quantum-loop']
    .flatMap((d) => corpusFiles(path.join(corpus, d)))
    .filter((f) => schemaFor(path.basename(f)));

  it('holds the files this suite reads', () => assert.ok(files.length >= 8, `only ${files.length} files`));

  describeSchemaAndByteIdentity(
    files.map((file) => ({
      name: `${path.basename(path.dirname(file))}/${path.basename(file)}`,
      file,
      schemaName: path.basename(file),
    })),
  );

  describe('operations on copies in a temporary workspace', () => {
    let ws: TempWorkspace;
    afterEach(() => ws?.dispose());
    const copy = (from: string, to: string) => ws.write(to, fs.readFileSync(path.join(corpus, from), 'utf8'));

    function flowWorkspace(): void {
      ws = tempWorkspace('ralph-corpus-');
      copy('flow-next/v0.5.6-meta.json', '.flow/meta.json');
      copy('flow-next/v0.5.6-epics-fn-3.json', '.flow/epics/fn-3.json');
      copy('flow-next/v0.5.6-tasks-fn-1.3.json', '.flow/tasks/fn-1.3.json');
      copy('flow-next/v0.5.6-tasks-fn-1.3.md', '.flow/tasks/fn-1.3.md');
      copy('flow-next/v0.5.6-tasks-fn-2.8.json', '.flow/tasks/fn-2.8.json');
    }

    it('a refused reset leaves every flow-next file byte-identical', async () => {
      flowWorkspace();
      const task = ws.read('.flow/tasks/fn-2.8.json');
      ws.write('.flow/epics/fn-2.json', '{\n  "id": "fn-2",\n  "status": "done",\n  "title": "closed"\n}\n');
      await assert.rejects(resetItem('fn-2.8', { folder: ws.dir, env: {}, now: () => NOW }), /closed epic/);
      assert.equal(ws.read('.flow/tasks/fn-2.8.json'), task);
    });

    it('resetting the done task fn-1.3 changes only its runtime keys and its Evidence lines', async () => {
      flowWorkspace();
      const json = ws.read('.flow/tasks/fn-1.3.json');
      const md = ws.read('.flow/tasks/fn-1.3.md');
      const r = await resetItem('fn-1.3', { folder: ws.dir, env: {}, now: () => NOW });
      assert.deepEqual(r.reset, ['fn-1.3']);
      const d = diffLines(json, ws.read('.flow/tasks/fn-1.3.json'));
      assert.deepEqual(d.removed.map((l) => l.trim().split(':')[0]).sort(), [
        '"assignee"',
        '"claim_note"',
        '"claimed_at"',
        '"status"',
        '"updated_at"',
      ]);
      assert.deepEqual(
        d.added.map((l) => l.trim()),
        ['"status": "todo",', '"updated_at": "2026-09-01T00:00:00.000000Z"'],
      );
      const m = diffLines(md, ws.read('.flow/tasks/fn-1.3.md'));
      assert.deepEqual(m, {
        removed: [
          '- Commits: a29de8e3c5bac283701d7bd4487d6b8b33dfc58d',
          '- Tests: flowctl validate --all, manual testing of memory commands',
        ],
        added: ['- Commits:', '- Tests:', ''],
      });
      // flowctl 4.4.0's clear_task_evidence ends the last section with a newline (checked side by side in test/corpus).
      assert.ok(ws.read('.flow/tasks/fn-1.3.md').endsWith('- PRs:\n'), "flowctl's final newline");
    });

    it('a second reset of the same task is a no-op that leaves both files byte-identical', async () => {
      flowWorkspace();
      await resetItem('fn-1.3', { folder: ws.dir, env: {}, now: () => NOW });
      const json = ws.read('.flow/tasks/fn-1.3.json');
      const md = ws.read('.flow/tasks/fn-1.3.md');
      const r = await resetItem('fn-1.3', { folder: ws.dir, env: {}, now: () => NOW + 1000 });
      assert.deepEqual([r.reset, r.written], [[], []]);
      assert.equal(ws.read('.flow/tasks/fn-1.3.json'), json);
      assert.equal(ws.read('.flow/tasks/fn-1.3.md'), md);
    });

    it('a v4.4.0 task (with "spec" instead of "epic") and its spec read into the plan graph', async () => {
      ws = tempWorkspace('ralph-corpus-');
      copy('flow-next/v4.4.0-meta.json', '.flow/meta.json');
      copy('flow-next/v4.4.0-specs-fn-114.json', '.flow/specs/fn-114-ralph-opt-in-extraction-guard-fixes-no.json');
      copy('flow-next/v4.4.0-tasks-fn-114.2.json', '.flow/tasks/fn-114-ralph-opt-in-extraction-guard-fixes-no.2.json');
      const plan = await loadPlan(ws.dir, {});
      assert.deepEqual(plan.problems, []);
      assert.deepEqual(
        plan.roots.map((r) => [r.id, r.status, r.itemIds]),
        [
          [
            'fn-114-ralph-opt-in-extraction-guard-fixes-no',
            'done',
            ['fn-114-ralph-opt-in-extraction-guard-fixes-no.2'],
          ],
        ],
      );
    });

    for (const q of ['quantum.json.example', 'quantum.dogfood.json']) {
      it(`${q}: stale detection that finds nothing leaves it byte-identical`, async () => {
        ws = tempWorkspace('ralph-corpus-');
        const text = copy(`quantum-loop/${q}`, 'quantum.json') && ws.read('quantum.json');
        const r = await staleStories({ folder: ws.dir, apply: true, now: () => NOW });
        assert.deepEqual(r!.written, []);
        assert.equal(ws.read('quantum.json'), text);
      });
    }

    it('quantum.json.example: starting US-001 changes only its status, startedAt and updatedAt', async () => {
      ws = tempWorkspace('ralph-corpus-');
      copy('quantum-loop/quantum.json.example', 'quantum.json');
      const before = ws.read('quantum.json');
      await startItem('US-001', { folder: ws.dir, actor: 'me', now: () => NOW });
      const d = diffLines(before, ws.read('quantum.json'));
      // A key appended after `notes` gives that line its comma, as any JSON diff would show.
      assert.deepEqual(
        d.removed.map((l) => l.trim()),
        ['"updatedAt": "2026-02-16T10:00:00Z",', '"status": "pending",', '"notes": ""'],
      );
      assert.deepEqual(
        d.added.map((l) => l.trim()),
        [
          '"updatedAt": "2026-09-01T00:00:00.000Z",',
          '"status": "in_progress",',
          '"notes": "",',
          '"startedAt": "2026-09-01T00:00:00.000Z"',
        ],
      );
    });

    it('quantum.dogfood.json: resetting US-010 changes only its status and the file updatedAt', async () => {
      ws = tempWorkspace('ralph-corpus-');
      copy('quantum-loop/quantum.dogfood.json', 'quantum.json');
      const before = ws.read('quantum.json');
      const r = await resetItem('US-010', { folder: ws.dir, now: () => NOW });
      assert.deepEqual(r.reset, ['US-010']);
      const after = ws.read('quantum.json');
      assert.equal(after.split('\n').length, before.split('\n').length);
      const story = before.split('\n').find((l) => l.includes('"id":"US-010"'))!;
      const changed = after.split('\n').filter((l, i) => l !== before.split('\n')[i]);
      // The dogfood file writes each story on one line: that line changes, and only its status within it.
      assert.deepEqual(changed, [
        '  "updatedAt": "2026-09-01T00:00:00.000Z",',
        story.replace('"status":"passed"', '"status":"pending"'),
      ]);
    });
  });
});
