import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import {
  planStarter,
  readFolderFacts,
  slugOf,
  suggestedGate,
  writeStarter,
  type NewPlanKind,
} from '../../../src/core/control/newPlan';
import { loadPlan } from '../../../src/core/sources/plan';
import { resolveGates } from '../../../src/core/gates/gateConfig';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const NOW = Date.parse('2026-12-06T02:00:00Z');

describe('starter plans (Ralph: New Plan…)', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-newplan-');
  });
  afterEach(() => t.dispose());

  async function create(kind: NewPlanKind, title: string, gate: string) {
    const facts = await readFolderFacts(t.dir);
    const starter = planStarter({ kind, title, gate, nowMs: NOW }, facts);
    const files = await writeStarter(t.dir, starter, facts.configText);
    return { starter, files: files.map((f) => path.relative(t.dir, f)) };
  }

  it('slugs a title as flowctl does', () => {
    const rows: [string, string][] = [
      ['Parse the config file', 'parse-the-config-file'],
      ['Café — déjà vu!', 'cafe-deja-vu'],
      ['snake_case  and   spaces', 'snake-case-and-spaces'],
      ['a'.repeat(30) + ' ' + 'b'.repeat(30), 'a'.repeat(30)],
      ['!!!', ''],
    ];
    for (const [title, slug] of rows) assert.equal(slugOf(title), slug, title);
  });

  it('suggests npm test only for a package.json with a real test script', () => {
    assert.equal(suggestedGate(JSON.stringify({ scripts: { test: 'mocha' } })), 'npm test');
    assert.equal(suggestedGate(JSON.stringify({ scripts: { test: 'echo "Error: no test specified" && exit 1' } })), '');
    assert.equal(suggestedGate('{not json'), '');
    assert.equal(suggestedGate(undefined), '');
  });

  it('a checklist Ralph reads (3 boxes, the second risky) and its gate in a new .ralph/config.json', async () => {
    const { starter, files } = await create('checklist', 'A slugify library', 'npm test');
    assert.deepEqual(files, ['RALPH_TASK.md', '.ralph/config.json']);
    assert.equal(starter.open, 'RALPH_TASK.md');
    const plan = await loadPlan(t.dir);
    const boxes = plan.items.filter((i) => i.kind === 'checkbox');
    assert.equal(boxes.length, 3);
    assert.ok(boxes.every((b) => b.status === 'todo'));
    assert.match(boxes[1]!.title, /\[risky\]|edge cases/i);
    assert.deepEqual((await resolveGates(t.dir))?.commands, { basic: 'npm test' });
  });

  it('a second checklist goes to specs/<slug>/tasks.md, never over RALPH_TASK.md', async () => {
    t.write('RALPH_TASK.md', '# mine\n- [ ] keep me\n');
    t.write('specs/export-csv/tasks.md', '- [ ] other\n');
    const { files } = await create('checklist', 'Export CSV', '');
    assert.deepEqual(files, ['specs/export-csv-2/tasks.md']);
    assert.equal(t.read('RALPH_TASK.md'), '# mine\n- [ ] keep me\n');
  });

  it('a quantum.json with US-002 after US-001, retries, and the gate added to an existing config', async () => {
    t.write('.ralph/config.json', '{\n  "maxIterations": 7\n}\n');
    const { files } = await create('quantum', 'Notes', 'make check');
    assert.deepEqual(files, ['quantum.json', '.ralph/config.json']);
    const plan = await loadPlan(t.dir);
    const stories = plan.items.filter((i) => i.kind === 'story');
    assert.deepEqual(
      stories.map((s) => [s.id, s.status, s.dependsOn, s.maxAttempts]),
      [
        ['US-001', 'todo', [], 3],
        ['US-002', 'todo', ['US-001'], 3],
      ],
    );
    assert.deepEqual(JSON.parse(t.read('.ralph/config.json')), { maxIterations: 7, gates: { basic: 'make check' } });
  });

  it('refuses a second quantum.json, and leaves a folder with gates alone', async () => {
    t.write('quantum.json', '{"stories": []}');
    const facts = await readFolderFacts(t.dir);
    assert.throws(
      () => planStarter({ kind: 'quantum', title: 'x', gate: '', nowMs: NOW }, facts),
      /quantum\.json exists/,
    );
    t.write('.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    const { files } = await create('checklist', 'Docs', 'make other');
    assert.deepEqual(files, ['RALPH_TASK.md']);
    assert.equal(t.read('.ralph/config.json'), '{"gates": {"basic": "npm test"}}');
  });

  it('a flow-next epic numbered after the highest, in the folder dialect, with .2 depending on .1', async () => {
    const first = await create('flow-next', 'Parse the config', 'npm test');
    assert.ok(first.files.includes('.flow/meta.json'));
    assert.equal(first.starter.open, '.flow/specs/fn-1-parse-the-config.md');
    const second = await create('flow-next', 'Release', '');
    assert.ok(!second.files.includes('.flow/meta.json'), 'meta.json is written once');
    assert.ok(!second.files.includes('.ralph/config.json'), 'the gate is configured already');
    const plan = await loadPlan(t.dir);
    assert.deepEqual(plan.problems, []);
    const tasks = plan.items.filter((i) => i.kind === 'task').map((i) => [i.id, i.status, i.dependsOn]);
    assert.deepEqual(tasks, [
      ['fn-1-parse-the-config.1', 'todo', []],
      ['fn-1-parse-the-config.2', 'todo', ['fn-1-parse-the-config.1']],
      ['fn-2-release.1', 'todo', []],
      ['fn-2-release.2', 'todo', ['fn-2-release.1']],
    ]);
  });

  it('writes nothing when one of its files appears meanwhile (no overwrite, no half plan)', async () => {
    const facts = await readFolderFacts(t.dir);
    const starter = planStarter({ kind: 'flow-next', title: 'Race', gate: 'npm test', nowMs: NOW }, facts);
    t.write('.flow/tasks/fn-1-race.2.md', 'someone else\n');
    await assert.rejects(writeStarter(t.dir, starter, facts.configText), /fn-1-race\.2\.md exists: nothing written/);
    assert.equal(t.read('.flow/tasks/fn-1-race.2.md'), 'someone else\n');
    for (const f of starter.files.filter((f) => f.path !== '.flow/tasks/fn-1-race.2.md'))
      assert.equal(t.exists(f.path), false, f.path);
  });

  it('refuses to edit a config that changed since it was read', async () => {
    t.write('.ralph/config.json', '{}\n');
    const facts = await readFolderFacts(t.dir);
    const starter = planStarter({ kind: 'checklist', title: 'T', gate: 'npm test', nowMs: NOW }, facts);
    t.write('.ralph/config.json', '{"maxIterations": 3}\n');
    await assert.rejects(writeStarter(t.dir, starter, facts.configText), /changed while the plan was made/);
    assert.equal(t.exists('RALPH_TASK.md'), false);
  });
});
