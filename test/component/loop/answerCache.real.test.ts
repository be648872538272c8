import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { snapshotFile } from '../../../src/core/store/snapshotCache';
import { fnv1a } from '../../../src/core/store/fnv';
import { bash, say } from '../../support/modelServer';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Breaker-s5 row 23: the agent (running as the user) rewrites the answer cache of `ralph status` in
 * `$XDG_CACHE_HOME/ralph/` so it says 2/2 whatever the files say. The engine removes the folder's entries after every
 * agent process ends and when the run ends, so a forgery is never served after its iteration.
 */
describe('the answer cache after an agent iteration', function () {
  this.timeout(120_000);
  let ws: Workspace | undefined;
  let cache: string;
  let saved: string | undefined;
  const make = useWorkspaces();
  beforeEach(() => {
    saved = process.env.XDG_CACHE_HOME;
    cache = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-answer-cache-'));
    process.env.XDG_CACHE_HOME = cache;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
    fs.rmSync(cache, { recursive: true, force: true });
  });

  it("removes the folder's status / next entries the agent forged, before the next iteration and at the run's end; other folders' entries stay", async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] First box\n- [ ] Second box\n' });
    const status = snapshotFile(ws.dir, 'status');
    const next = snapshotFile(ws.dir, 'next');
    const other = snapshotFile(path.join(ws.dir, 'elsewhere'), 'status');
    fs.mkdirSync(path.dirname(status), { recursive: true });
    fs.writeFileSync(status, '{"user":"ran ralph status before the run"}');
    fs.writeFileSync(
      other,
      JSON.stringify({ format: 'ralph-snapshot-cache', version: 1, folder: path.join(ws.dir, 'elsewhere') }),
    );
    const seenAfterIteration: boolean[] = [];
    const run = await runEngine(
      ws,
      [
        bash(
          `printf '{"inputs":[],"outputs":{"text":"Progress: 2/2"}}' > '${status}' && printf '{}' > '${next}' && echo forged`,
        ),
        say('I forged the answer cache.'),
      ],
      {
        config: { gates: { basic: 'false' }, maxIterations: 1 },
        onEvent: (e) => {
          if (e.type === 'iterationEnded') seenAfterIteration.push(fs.existsSync(status) || fs.existsSync(next));
        },
      },
    );
    assert.match(
      JSON.stringify(run.server.agentRequests().map((r) => r.body)),
      /forged/,
      'the agent wrote the forgery',
    );
    assert.deepEqual(seenAfterIteration, [false], 'gone once the agent process ended');
    assert.equal(fs.existsSync(status), false);
    assert.equal(fs.existsSync(next), false);
    assert.equal(fs.existsSync(other), true, "another folder's entry stays");
  });

  it('removes a forged parse cache and the entries of another spelling of the folder (breaker-s6 rows 21, 10)', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] First box\n- [ ] Second box\n' });
    const link = path.join(cache, 'link');
    fs.symlinkSync(ws.dir, link);
    const dir = path.join(cache, 'ralph');
    const parse = path.join(dir, `${fnv1a(ws.dir)}-quantum.json`);
    const viaLink = snapshotFile(link, 'status');
    fs.mkdirSync(dir, { recursive: true });
    const forged = (format: string, folder: string) =>
      `{"format":"${format}","version":1,"folder":"${folder}","entries":{}}`;
    const seenAfterIteration: boolean[] = [];
    await runEngine(
      ws,
      [
        bash(
          `printf '%s' '${forged('ralph-parse-cache', ws.dir)}' > '${parse}' && printf '%s' '${forged('ralph-snapshot-cache', link)}' > '${viaLink}' && echo forged`,
        ),
        say('I forged the parse cache.'),
      ],
      {
        config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
        onEvent: (e) => {
          if (e.type === 'iterationEnded') seenAfterIteration.push(fs.existsSync(parse) || fs.existsSync(viaLink));
        },
      },
    );
    assert.deepEqual(seenAfterIteration, [false], 'gone once the agent process ended');
    assert.equal(fs.existsSync(parse), false);
    assert.equal(fs.existsSync(viaLink), false);
  });
});
