import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { cliPath } from '../../support/cli';
import { claudeBinary, requireClaude, withoutClaudeVars } from '../../support/claude';
import { makeTempDir, makeTempFolder, type TempFolder } from '../../support/tempFolder';

const quantum = { project: 'p', stories: [{ id: 'US-001', title: 'Parser', status: 'pending', priority: 1, dependsOn: [], retries: { attempts: 0, maxAttempts: 3 } }] };

/**
 * New-user try (session 3): the real Claude CLI refuses `--permission-mode bypassPermissions` as root unless
 * IS_SANDBOX=1. `ralph run` must end failed at once with the cause and the fix, not retry into a cap.
 */
describe('cli: ralph run as root without IS_SANDBOX (the real claude refuses)', function () {
  this.timeout(90_000);
  let t: TempFolder | undefined;
  let home: string | undefined;
  afterEach(() => {
    t?.dispose();
    if (home) fs.rmSync(home, { recursive: true, force: true });
    t = home = undefined;
  });

  it('ends failed with exit 1, a line naming the cause and the fix, and the run record says failed', () => {
    assert.equal(process.getuid?.(), 0, 'this test runs as root (the CLI refuses only as root), as the tiers do here');
    requireClaude();
    t = makeTempFolder('ralph-root-', { ralphDir: true });
    home = makeTempDir('ralph-root-home-');
    t.write('.ralph/config.json', JSON.stringify({ claudePath: claudeBinary }));
    t.write('quantum.json', JSON.stringify(quantum, null, 2));
    const env = { ...withoutClaudeVars(), HOME: home, ANTHROPIC_API_KEY: 'test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
    delete (env as Record<string, string>).IS_SANDBOX;
    const r = spawnSync(process.execPath, [cliPath, '-C', t.dir, 'run', '--no-gates', '--trust', '--max-iterations', '3'], { encoding: 'utf8', timeout: 60_000, env });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 1, out);
    assert.match(out, /🚫 AGENT REFUSED TO START/);
    assert.doesNotMatch(out, /API ERROR/);
    assert.match(out, /as root/);
    assert.match(out, /run ralph as a normal \(non-root\) user/);
    assert.match(out, /IS_SANDBOX=1/);
    const runs = fs.readdirSync(t.file('.ralph/runs'));
    assert.equal(runs.length, 1);
    const record = JSON.parse(t.read(`.ralph/runs/${runs[0]}/run.json`)) as { state: string; endReason: string };
    assert.equal(record.state, 'failed', JSON.stringify(record));
    assert.match(record.endReason, /as root/);
    assert.equal(JSON.parse(t.read('quantum.json')).stories[0].status, 'pending', 'the story was given back');
  });
});
