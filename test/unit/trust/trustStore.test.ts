import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readTrustRecord, trustDir, trustRecordPath, writeTrustRecord } from '../../../src/core/trust/trustStore';
import { checkWorkspaceTrust, trustWorkspace } from '../../../src/core/trust/workspaceTrust';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

describe('recording trust in the user state folder', () => {
  let t: TempFolder;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    t = makeTempFolder('ralph-trust-');
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    env = { XDG_STATE_HOME: path.join(t.dir, 'state'), HOME: path.join(t.dir, 'home') };
  });
  afterEach(() => t.dispose());
  const ws = () => path.join(t.dir, 'ws');

  it('lives in $XDG_STATE_HOME/ralph/trust, else ~/.local/state/ralph/trust (a relative XDG_STATE_HOME is ignored)', () => {
    assert.equal(trustDir({ XDG_STATE_HOME: '/s', HOME: '/h' }), '/s/ralph/trust');
    assert.equal(trustDir({ HOME: '/h' }), '/h/.local/state/ralph/trust');
    assert.equal(trustDir({ XDG_STATE_HOME: 'rel', HOME: '/h' }), '/h/.local/state/ralph/trust');
  });

  it('writes a record keyed by the folder and reads it back, also through a symlink to the folder', async () => {
    const written = await writeTrustRecord(ws(), { hash: 'sha256:x', lines: ['a'] }, env);
    assert.equal(written.folder, fs.realpathSync(ws()));
    assert.deepEqual(await readTrustRecord(ws(), env), written);
    fs.symlinkSync(ws(), path.join(t.dir, 'link'));
    assert.deepEqual(await readTrustRecord(path.join(t.dir, 'link'), env), written);
    assert.ok(fs.existsSync(trustRecordPath(fs.realpathSync(ws()), env)));
    assert.equal(await readTrustRecord(t.dir, env), null, 'another folder has no record');
  });

  it('counts a record that does not parse, or names another folder, as no trust', async () => {
    const file = trustRecordPath(fs.realpathSync(ws()), env);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '{ not json');
    assert.equal(await readTrustRecord(ws(), env), null);
    fs.writeFileSync(file, JSON.stringify({ folder: '/elsewhere', hash: 'h', lines: [], trustedAt: 'x' }));
    assert.equal(await readTrustRecord(ws(), env), null);
  });

  it('trusts the content as it is, and a change of gates.basic makes it untrusted again', async () => {
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'npm test' } }));
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'untrusted');
    const r = await trustWorkspace(ws(), { env });
    assert.equal(r?.before.state, 'untrusted');
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'trusted');
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    const v = await checkWorkspaceTrust(ws(), null, env);
    assert.equal(v.state, 'changed');
    assert.equal(v.allowed, false);
    // The file `npm test` ran (package.json's scripts.test, here absent) is no longer part of the content either.
    assert.deepEqual(v.diff, [
      '- .ralph/config.json gates.basic = "npm test"',
      '- workspace file .npmrc missing',
      '- workspace file package.json scripts.test (no package.json)',
      '+ .ralph/config.json gates.basic = "true"',
    ]);
  });

  // breaker-s6 row 05: the agents' project configuration names programs (hooks, apiKeyHelper, MCP servers).
  it('covers .claude/settings*.json, .mcp.json and .cursor/{mcp,hooks}.json whole: listed, and a change (or a new file) needs trust again', async () => {
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'nothing', 'no such files: nothing to trust');
    t.write('ws/.claude/settings.json', '{"hooks": {}}');
    t.write('ws/.mcp.json', '{"mcpServers": {}}');
    t.write('ws/.cursor/hooks.json', '{"version": 1}');
    const v = await checkWorkspaceTrust(ws(), null, env);
    assert.equal(v.state, 'untrusted');
    assert.deepEqual(
      v.lines.map((l) => l.replace(/sha256:\w+/, 'sha256:…')),
      [
        'workspace file .claude/settings.json sha256:…',
        'workspace file .mcp.json sha256:…',
        'workspace file .cursor/hooks.json sha256:…',
      ],
    );
    await trustWorkspace(ws(), { env });
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'trusted');
    t.write('ws/.claude/settings.local.json', '{"apiKeyHelper": "./x"}');
    const added = await checkWorkspaceTrust(ws(), null, env);
    assert.equal(added.state, 'changed');
    assert.match(added.diff.join('\n'), /^\+ workspace file \.claude\/settings\.local\.json sha256:/m);
  });

  it('refuses to trust content other than the one shown (expectedHash), and records nothing when there is nothing to trust', async () => {
    t.write('ws/.ralph/command-policy', '[gates]\nbasic | make test\n');
    const shown = await checkWorkspaceTrust(ws(), null, env);
    t.write('ws/.ralph/command-policy', '[gates]\nbasic | true\n');
    assert.equal(await trustWorkspace(ws(), { expectedHash: shown.hash, env }), null);
    assert.equal(await readTrustRecord(ws(), env), null);
    const empty = path.join(t.dir, 'empty');
    fs.mkdirSync(empty);
    assert.deepEqual((await trustWorkspace(empty, { env }))?.record, null);
    assert.equal(fs.existsSync(path.join(t.dir, 'state')), false, 'nothing written');
  });

  it('names the file and line of a .ralph/config.json that is not JSON', async () => {
    t.write('ws/.ralph/config.json', '{\n  "gates": ,\n}\n');
    await assert.rejects(checkWorkspaceTrust(ws(), null, env), /\.ralph\/config\.json:2:/);
  });

  it('never writes inside the workspace', async () => {
    t.write('ws/.ralph/config.json', JSON.stringify({ claudePath: './x' }));
    await trustWorkspace(ws(), { env });
    assert.deepEqual(fs.readdirSync(path.join(ws(), '.ralph')), ['config.json']);
    assert.ok(!fs.readdirSync(os.tmpdir()).includes('ralph-trust.json'));
  });
});
