import * as assert from 'node:assert/strict';
import { checkWave } from '../../../src/core/waves/check';
import { bash, say } from '../../support/modelServer';
import { writeCheckpoint } from '../../support/waveFixture';
import { runEngine, useWorkspaces, type Workspace } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/** The claude CLI's light stand-in (test/support/stubs/scriptedClaude.cjs): what is tested is the run of the brief. */
const stub = { claudePath: scriptedClaudeStub };

describe("Resume with Ralph: a resume brief run as a task file (the claude CLI's stand-in)", function () {
  this.timeout(120_000);
  const make = useWorkspaces();
  let ws: Workspace | undefined;

  it("runs the brief's one checkbox with `--source <brief>` and verifies it with the gate", async () => {
    ws = make({ 'README.md': '# project\n', '.gitignore': '.ralph/\n' });
    writeCheckpoint(ws.dir, 'W1', 'W1-A', {
      schema_version: 1,
      ts: new Date(Date.now() - 600_000).toISOString(),
      last_action: 'wrote docs/a.md',
      files_created: ['docs/a.md'],
      next_step: 'write docs/b.md',
    });
    const pass = await checkWave({ folder: ws.dir, phase: 'p' });
    assert.deepEqual(pass.briefs_written, ['.planning/p/resume-W1-A.md']);
    const brief = '.planning/p/resume-W1-A.md';
    const run = await runEngine(
      ws,
      [
        bash(
          `mkdir -p docs && echo b > docs/b.md && sed -i 's/^- \\[ \\] write docs/- [x] write docs/' ${brief} && git add docs/b.md ${brief} && git commit -q -m "docs: b"`,
        ),
        say('Wrote docs/b.md and ticked the box.'),
      ],
      {
        config: { ...stub, gates: { basic: 'test -f docs/b.md', final: 'test -f docs/b.md' } },
        engine: { source: brief },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 0);
    assert.ok(ws.read(brief).endsWith('- [x] write docs/b.md\n'));
    assert.ok(run.prompts()[0]!.includes('write docs/b.md'), "the prompt carries the brief's task");
  });
});
