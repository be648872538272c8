import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadPlan } from '../../../src/core/sources/plan';
import { Logger } from '../../../src/extension/logger';
import { PlanLoader } from '../../../src/extension/planLoader';
import { offerGates, RunController } from '../../../src/extension/runController';
import { messageLines, recorded, resetFake, workspace } from '../../support/fakeVscode';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

describe('Ralph: Start with a configuration that does not parse (fake vscode)', () => {
  let t: TempFolder;
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-start-');
  });
  afterEach(() => t.dispose());

  it('shows a Ralph error naming .ralph/config.json:line:column with Open File, and tells the store Start failed', async () => {
    t.write('RALPH_TASK.md', '- [ ] One\n');
    t.write('.ralph/config.json', '{\n  "maxIterations": 3,\n  "agent": claude\n}\n');
    const calls: string[] = [];
    const runs = new RunController(new Logger(), {
      starting: (f) => calls.push(`starting ${f}`),
      started: (f, id) => calls.push(`started ${f} ${id}`),
      failed: (f) => calls.push(`failed ${f}`),
    });
    const id = await runs.start({ folder: t.dir, source: 'RALPH_TASK.md', agent: 'claude' });
    assert.equal(id, undefined);
    await new Promise((r) => setImmediate(r));
    assert.equal(messageLines().length, 1, messageLines().join('\n'));
    assert.match(messageLines()[0]!, /^error: Ralph: \.ralph\/config\.json:3:12: .+ \[Open File\]$/);
    assert.deepEqual(calls, [`starting ${t.dir}`, `failed ${t.dir}`]);
    runs.dispose();
  });
});

describe('Ralph: Start in a folder without gates (fake vscode)', () => {
  let t: TempFolder;
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-start-');
  });
  afterEach(() => t.dispose());

  async function offered(answer: string | undefined): Promise<unknown[]> {
    const starts: unknown[] = [];
    recorded.commands.set('ralph.start', (a) => starts.push(a));
    recorded.answers.push(answer);
    await offerGates(t.dir, { folder: t.dir, source: 'RALPH_TASK.md', agent: 'claude' });
    return starts;
  }

  it('says why and offers the setting, config.json or a start without gates, never the CLI flag', async () => {
    await offered(undefined);
    assert.equal(messageLines().length, 1, messageLines().join('\n'));
    assert.match(
      messageLines()[0]!,
      /^error: Ralph: no gates configured in .+\[Open Settings, Open config\.json, Start Without Gates\]$/,
    );
    assert.doesNotMatch(messageLines()[0]!, /--no-gates/);
  });

  it('starts the same run without gates when asked', async () => {
    assert.deepEqual(await offered('Start Without Gates'), [
      { folder: t.dir, source: 'RALPH_TASK.md', agent: 'claude', noGates: true },
    ]);
  });

  it('opens .ralph/config.json, written with an example gate only when there is none', async () => {
    await offered('Open config.json');
    assert.match(t.read('.ralph/config.json'), /"gates": \{ "basic": "npm test" \}/);
    t.write('.ralph/config.json', '{ "maxIterations": 3 }\n');
    await offered('Open config.json');
    assert.equal(t.read('.ralph/config.json'), '{ "maxIterations": 3 }\n', 'an existing file is never overwritten');
  });
});

describe('Ralph: Start in Restricted Mode (fake vscode)', () => {
  beforeEach(() => resetFake());

  it("refuses with VS Code's Manage Workspace Trust as its action, and the Start button is hidden there", async () => {
    workspace.isTrusted = false;
    const managed: unknown[] = [];
    recorded.commands.set('workbench.trust.manage', () => managed.push('trust'));
    recorded.answers.push('Manage Workspace Trust');
    const runs = new RunController(new Logger());
    assert.equal(await runs.start({ folder: '/nowhere' }), undefined);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(messageLines(), [
      'error: Ralph: Start runs an agent CLI with your permissions. Trust this workspace first (Restricted Mode). [Manage Workspace Trust]',
    ]);
    assert.deepEqual(managed, ['trust']);
    runs.dispose();
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      contributes: { menus: Record<'view/title' | 'view/item/context', { command: string; when: string }[]> };
    };
    const play = manifest.contributes.menus['view/title'].find((m) => m.command === 'ralph.start');
    assert.match(play?.when ?? '', /\bisWorkspaceTrusted\b/);
    // The tree's own ways to start a run are hidden there too.
    for (const id of ['ralph.tree.startHere', 'ralph.tree.resumeWithRalph']) {
      const item = manifest.contributes.menus['view/item/context'].find((m) => m.command === id);
      assert.match(item?.when ?? '', /\bisWorkspaceTrusted\b/, id);
    }
  });
});

describe('PlanLoader', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-planloader-');
  });
  afterEach(() => t.dispose());

  it('reads the same plan on the worker thread as loadPlan on the main thread', async () => {
    t.write('RALPH_TASK.md', '- [x] One\n- [ ] Two\n');
    const loader = new PlanLoader(path.join(repoRoot, 'dist', 'planWorker.js'), loadPlan);
    try {
      assert.deepEqual(await loader.load(t.dir), await loadPlan(t.dir));
    } finally {
      loader.dispose();
    }
  });

  it('shares a read under way and makes exactly one more for requests made during it', async () => {
    t.write('RALPH_TASK.md', '- [ ] One\n');
    let reads = 0;
    const loader = new PlanLoader('/nonexistent/planWorker.js', async (f) => {
      reads++;
      await new Promise((r) => setTimeout(r, 10));
      return loadPlan(f);
    });
    const [a, b, c] = [loader.load(t.dir), loader.load(t.dir), loader.load(t.dir)];
    await Promise.all([a, b, c]);
    assert.equal(reads, 2);
    loader.dispose();
    await assert.rejects(loader.load(t.dir), /disposed/);
  });
});
