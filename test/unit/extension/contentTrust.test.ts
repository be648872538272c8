import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { checkWorkspaceTrust, trustWorkspace } from '../../../src/core/trust/workspaceTrust';
import { ensureContentTrusted, TRUST_BUTTON, type TrustUi } from '../../../src/extension/contentTrust';
import { Logger } from '../../../src/extension/logger';
import { recorded, resetFake } from '../../support/fakeVscode';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

describe('Ralph: Start asks before using untrusted workspace configuration (fake vscode)', () => {
  let t: TempFolder;
  const saved = { XDG_STATE_HOME: process.env.XDG_STATE_HOME, RALPH_TRUST: process.env.RALPH_TRUST };
  const ws = () => path.join(t.dir, 'ws');
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-vscode-trust-');
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    process.env.XDG_STATE_HOME = path.join(t.dir, 'state');
    delete process.env.RALPH_TRUST;
  });
  afterEach(() => {
    t.dispose();
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  });

  it('starts without asking when the configuration names no program', async () => {
    t.write('ws/.ralph/config.json', '{"maxIterations": 3}');
    assert.equal(await ensureContentTrusted(ws(), new Logger()), true);
    assert.deepEqual(recorded.messages, []);
  });

  it('shows a modal with what the configuration runs, and trusting it records the same hash as `ralph trust`', async () => {
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    recorded.answers.push(TRUST_BUTTON);
    assert.equal(await ensureContentTrusted(ws(), new Logger()), true);
    const m = recorded.messages[0]!;
    assert.equal(m.kind, 'warning');
    assert.equal(m.options?.modal, true);
    assert.deepEqual(m.items, ['Cancel', TRUST_BUTTON, 'Close'], 'Cancel first: the focused button Enter presses');
    assert.deepEqual(m.closeAffordance, ['Close']);
    assert.match(m.options?.detail ?? '', /What it runs:\n\.ralph\/config\.json gates\.basic = "npm test"/);
    assert.equal((await checkWorkspaceTrust(ws())).state, 'trusted');
  });

  it('Enter on the modal (its default, first button Cancel) or Escape (its close affordance) starts nothing', async () => {
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    recorded.answers.push('Cancel', 'Close');
    assert.equal(await ensureContentTrusted(ws(), new Logger()), false);
    assert.equal(await ensureContentTrusted(ws(), new Logger()), false);
    assert.equal((await checkWorkspaceTrust(ws())).state, 'untrusted');
  });

  it('cancelling the modal does not start and trusts nothing', async () => {
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    recorded.answers.push(undefined);
    assert.equal(await ensureContentTrusted(ws(), new Logger()), false);
    assert.equal((await checkWorkspaceTrust(ws())).state, 'untrusted');
  });

  it('after the agent rewrote gates.basic to true, the modal shows the change', async () => {
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    await trustWorkspace(ws());
    assert.equal(await ensureContentTrusted(ws(), new Logger()), true, 'trusted content starts without asking');
    assert.equal(recorded.messages.length, 0);
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "true"}}');
    recorded.answers.push(undefined);
    assert.equal(await ensureContentTrusted(ws(), new Logger()), false);
    assert.match(recorded.messages[0]!.message, /changed since you trusted it/);
    assert.match(
      recorded.messages[0]!.options?.detail ?? '',
      /- \.ralph\/config\.json gates\.basic = "npm test"\n- workspace file \.npmrc missing\n- workspace file package\.json scripts\.test \(no package\.json\)\n\+ \.ralph\/config\.json gates\.basic = "true"/,
    );
  });

  it('trusts nothing when the files change while the modal is open', async () => {
    t.write('ws/.ralph/command-policy', '[gates]\nbasic | make test\n');
    recorded.answers.push(() => {
      t.write('ws/.ralph/command-policy', '[gates]\nbasic | true\n');
      return TRUST_BUTTON;
    });
    assert.equal(await ensureContentTrusted(ws(), new Logger()), false);
    assert.equal((await checkWorkspaceTrust(ws())).state, 'untrusted');
    assert.match(recorded.messages.at(-1)!.message, /changed while you were deciding/);
  });

  it('RALPH_TRUST=1 in the extension host starts without asking and records nothing', async () => {
    t.write('ws/.ralph/config.json', '{"claudePath": "./bin/claude"}');
    process.env.RALPH_TRUST = '1';
    assert.equal(await ensureContentTrusted(ws(), new Logger()), true);
    assert.deepEqual(recorded.messages, []);
    delete process.env.RALPH_TRUST;
    assert.equal((await checkWorkspaceTrust(ws())).state, 'untrusted');
  });

  it('Ralph: Start refuses (no run) when the modal is cancelled', async () => {
    const { RunController } = await import('../../../src/extension/runController');
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    const runs = new RunController(new Logger());
    recorded.answers.push(undefined);
    assert.equal(await runs.start({ folder: ws(), source: 'RALPH_TASK.md' }), undefined);
    assert.equal(runs.isRunning(ws()), false);
    assert.equal(recorded.messages[0]!.options?.modal, true);
    runs.dispose();
  });

  it('asks through the ui it is given (the seam the real-host test answers through), and trusts what it showed', async () => {
    t.write('ws/.ralph/config.json', '{"gates": {"basic": "npm test"}}');
    const asked: string[] = [];
    const ui: TrustUi = {
      confirm: async (m, d, a) => {
        asked.push(m, d, a);
        return true;
      },
      warn: (m) => void asked.push(m),
      error: (m) => void asked.push(m),
    };
    assert.equal(await ensureContentTrusted(ws(), new Logger(), ui), true);
    assert.match(asked[0]!, /names programs to run\. Trust it\?/);
    assert.match(asked[1]!, /\.ralph\/config\.json gates\.basic = "npm test"/);
    assert.equal(asked[2], TRUST_BUTTON);
    assert.deepEqual(recorded.messages, [], "VS Code's own dialogs were not used");
    assert.equal((await checkWorkspaceTrust(ws())).state, 'trusted');
  });
});
