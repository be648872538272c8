import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { detectSources } from '../../../src/core/sources/detect';
import { discoverAgents, parseVersion } from '../../../src/core/agents/discover';
import { fixture } from '../../support/fixtures';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempDir } from '../../support/tempFolder';

const tempWorkspace = (files: Record<string, string>): string => makeTempDir('ralph-doctor-', files);

const stubBin = shellStub;

describe('detecting the Ralph artifacts of a workspace folder', () => {
  it('finds every kind of source with cheap counts', async () => {
    const dir = tempWorkspace({
      '.flow/tasks/fn-1.1.json': '{}',
      '.flow/tasks/fn-1.2.json': '{}',
      '.flow/epics/fn-1.json': '{}',
      'quantum.json': JSON.stringify({
        feature: 'f',
        stories: [{ id: 'US-1', status: 'passed' }, { id: 'US-2', status: 'pending' }, { id: 'US-3' }],
      }),
      'RALPH_TASK.md': '- [x] a\n- [X] b\n- [ ] c\n',
      'PROMPT.md': '* [ ] only\n',
      'specs/auth/tasks.md': '1. [ ] one\n2. [x] two\n',
      '.ijfw/wave-1/': '',
      '.ijfw/wave-2/': '',
      '.ijfw/other/': '',
      '.ralph/runs/r1/': '',
    });
    const r = await detectSources(dir);
    assert.deepEqual(
      r.sources.map((s) => [s.kind, s.path, s.count]),
      [
        ['flow-next', '.flow', { total: 2, unit: 'tasks' }],
        ['quantum', 'quantum.json', { total: 3, done: 1, unit: 'stories' }],
        ['checklist', 'RALPH_TASK.md', { total: 3, done: 2, unit: 'tasks' }],
        ['checklist', 'PROMPT.md', { total: 1, done: 0, unit: 'tasks' }],
        ['checklist', 'specs/auth/tasks.md', { total: 2, done: 1, unit: 'tasks' }],
        ['waves', '.ijfw', { total: 2, unit: 'waves' }],
        ['ralph', '.ralph', { total: 1, unit: 'runs' }],
      ],
    );
    assert.deepEqual(r.problems, []);
  });

  it('reports a quantum.json that is not JSON as a problem with its line and column', async () => {
    const dir = tempWorkspace({ 'quantum.json': '{\n  "stories": [\n    { "id": "US-1", }\n  ]\n}\n' });
    const r = await detectSources(dir);
    assert.deepEqual(r.problems, [
      { file: 'quantum.json', line: 3, column: 21, message: 'invalid JSON: property name expected' },
    ]);
    assert.equal(r.sources[0]?.kind, 'quantum');
  });

  it('counts the waves of an IJFW folder (test/fixtures/seed-formats/ijfw), not its blackboard', async () => {
    const dir = tempWorkspace({});
    fs.cpSync(fixture('seed-formats', 'ijfw'), path.join(dir, '.ijfw'), { recursive: true });
    assert.deepEqual(
      (await detectSources(dir)).sources.map((s) => [s.kind, s.path, s.count]),
      [['waves', '.ijfw', { total: 2, unit: 'waves' }]],
    );
  });

  it('reports a quantum.json that breaks the schema with the path and position of the bad value (one reader: readQuantum)', async () => {
    const dir = tempWorkspace({ 'quantum.json': '{\n  "stories": [\n    { "id": "US-1", "status": 5 }\n  ]\n}\n' });
    const r = await detectSources(dir);
    assert.deepEqual(
      r.problems.map((p) => [p.file, p.line, p.message.split(':')[0]]),
      [['quantum.json', 3, 'stories.0.status']],
    );
  });

  it('finds nothing in an empty folder', async () => {
    assert.deepEqual((await detectSources(tempWorkspace({}))).sources, []);
  });
});

describe('finding agent CLIs on PATH (without running them)', () => {
  it('locates but never executes an agent in an untrusted workspace', async () => {
    const log = path.join(os.tmpdir(), `ralph-stub-${process.pid}-${Date.now()}.log`);
    const bin = stubBin('claude', `echo called >> '${log}'; echo 1.0.0`);
    const agents = await discoverAgents({ pathEnv: bin, runVersions: false });
    assert.equal(agents[0]?.version, null);
    assert.match(agents[0]?.note ?? '', /not trusted/);
    assert.equal(fs.existsSync(log), false);
  });

  it('takes the semantic version out of a version banner', () => {
    assert.equal(parseVersion('2.1.328 (Claude Code)'), '2.1.328');
    assert.equal(parseVersion('codex-cli 0.66.0'), '0.66.0');
    assert.equal(parseVersion('weird'), 'weird');
  });
});
