import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { cliPath } from '../../support/cli';
import { claudeBinary, requireClaude, withoutClaudeVars } from '../../support/claude';
import { makeTempDir, makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** A hand-written quantum.json: one story on two lines, one on one line, no `startedAt`, no file `updatedAt`. */
const compact = '{\n  "project": "p",\n  "stories": [\n    {"id": "US-001", "title": "Parser", "status": "pending",\n     "priority": 1, "dependsOn": []},\n    {"id": "US-002", "title": "Printer", "status": "pending", "priority": 2, "dependsOn": ["US-001"]}\n  ]\n}\n';

/**
 * New-user try (session 3): a `ralph run` that did no work turned a two-line story into 9 lines and added
 * `"startedAt": null`. The run here does no work because the real Claude CLI refuses to start as root (the
 * tiers run as root): the story is started, then given back, and the file must read as before.
 */
describe('cli: ralph run that does no work leaves a compact quantum.json as it was', function () {
  this.timeout(90_000);
  let t: TempFolder | undefined;
  let home: string | undefined;
  afterEach(() => {
    t?.dispose();
    if (home) fs.rmSync(home, { recursive: true, force: true });
    t = home = undefined;
  });

  it('the started-then-given-back story and the untouched one are byte-identical', () => {
    assert.equal(process.getuid?.(), 0, 'this test runs as root (the real claude then refuses to start), as the tiers do here');
    requireClaude();
    t = makeTempFolder('ralph-compact-', { ralphDir: true });
    home = makeTempDir('ralph-compact-home-');
    t.write('.ralph/config.json', JSON.stringify({ claudePath: claudeBinary }));
    t.write('quantum.json', compact);
    const env = { ...withoutClaudeVars(), HOME: home, ANTHROPIC_API_KEY: 'test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
    delete (env as Record<string, string>).IS_SANDBOX;
    const r = spawnSync(process.execPath, [cliPath, '-C', t.dir, 'run', '--no-gates', '--trust', '--max-iterations', '2'], { encoding: 'utf8', timeout: 60_000, env });
    const out = r.stdout + r.stderr;
    assert.match(out, /AGENT REFUSED TO START/, 'the run did no work');
    const runs = fs.readdirSync(t.file('.ralph/runs'));
    const record = JSON.parse(t.read(`.ralph/runs/${runs[0]}/run.json`)) as { currentItem?: unknown; iteration?: number };
    assert.ok((record.iteration ?? 0) >= 1, `the story was started: ${JSON.stringify(record)}`);
    assert.equal(t.read('quantum.json'), compact);
  });
});
