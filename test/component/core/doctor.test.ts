import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildDoctorReport, formatDoctorReport } from '../../../src/core/doctor/report';
import { discoverAgents, VersionCache } from '../../../src/core/agents/discover';
import { claudeBinDir as realClaudeBin } from '../../support/claude';
import { cliPath as cli } from '../../support/cli';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempDir } from '../../support/tempFolder';

const tempWorkspace = (files: Record<string, string>): string => makeTempDir('ralph-doctor-', files);

const stubBin = shellStub;

describe('finding agent CLIs on PATH (running their --version)', () => {
  it('reads the version each agent prints', async () => {
    const bin = stubBin('cursor-agent', 'echo "2025.11.25-d5b3271"');
    const agents = await discoverAgents({ pathEnv: bin });
    assert.deepEqual(
      agents.map((a) => [a.name, a.version]),
      [['cursor-agent', '2025.11.25-d5b3271']],
    );
  });

  it('reports an agent whose --version fails instead of throwing', async () => {
    const bin = stubBin('codex', 'echo boom >&2; exit 3');
    const agents = await discoverAgents({ pathEnv: bin });
    assert.deepEqual(
      agents.map((a) => [a.name, a.version, a.note]),
      [['codex', null, '--version exited 3']],
    );
  });

  it('with a version cache, runs each binary once while its file is unchanged, and again after it changes', async () => {
    const runs = path.join(makeTempDir('ralph-version-runs-'), 'runs');
    const bin = stubBin('gemini', `echo run >> '${runs}'; echo 0.61.0`);
    const versionCache = new VersionCache();
    const ask = () => discoverAgents({ pathEnv: bin, versionCache });
    for (let i = 0; i < 3; i++)
      assert.deepEqual(
        (await ask()).map((a) => [a.name, a.version]),
        [['gemini', '0.61.0']],
      );
    assert.equal(fs.readFileSync(runs, 'utf8'), 'run\n');
    fs.writeFileSync(path.join(bin, 'gemini'), `#!/bin/sh\necho run >> '${runs}'; echo 0.62.0-rc.1\n`);
    assert.deepEqual(
      (await ask()).map((a) => a.version),
      ['0.62.0-rc.1'],
    );
    assert.equal(fs.readFileSync(runs, 'utf8'), 'run\nrun\n');
  });
});

describe('ralph doctor', () => {
  it('reports the process containment in use: a PID namespace here by default, the marker sweep when config says "marker" (issue 12)', () => {
    const run = (config: object) => {
      const dir = tempWorkspace({ '.ralph/config.json': JSON.stringify(config), 'RALPH_TASK.md': '- [ ] a\n' });
      // `containment` is trusted content (breaker s5 row 31): trusted here, in a state folder of the test's own.
      const env = {
        ...process.env,
        PATH: `${realClaudeBin}:${process.env.PATH}`,
        XDG_STATE_HOME: path.join(dir, '.state'),
      };
      assert.equal(spawnSync(process.execPath, [cli, 'trust'], { cwd: dir, env }).status, 0);
      const json = JSON.parse(
        spawnSync(process.execPath, [cli, 'doctor', '--json'], { cwd: dir, env }).stdout.toString(),
      );
      const text = spawnSync(process.execPath, [cli, 'doctor'], { cwd: dir, env }).stdout.toString();
      return { json, text };
    };
    const auto = run({});
    assert.deepEqual(
      [auto.json.containment.kind, auto.json.containment.mode],
      ['pid-namespace', 'auto'],
      JSON.stringify(auto.json.containment),
    );
    assert.match(
      auto.text,
      /Process containment \(containment: "auto"\):\n {2}PID namespace \(unshare [^)]*--pid[^)]*\)\n {2}every process an iteration or a gate starts ends with it/,
    );
    const marker = run({ containment: 'marker' });
    assert.deepEqual([marker.json.containment.kind, marker.json.containment.mode], ['marker', 'marker']);
    assert.match(
      marker.text,
      /Process containment \(containment: "marker"\):\n {2}environment marker sweep \(config containment: "marker"\)\n {2}a process that leaves its process group AND clears its environment \(setsid env -i …\) can outlive the run/,
    );
  });

  it('lists .ralph/ and quantum.json and the real claude 2.1.328, exiting 0', () => {
    const dir = tempWorkspace({ '.ralph/command-policy': '[gates]\nbasic | true\n', 'quantum.json': '{"stories":[]}' });
    const out = execFileSync(process.execPath, [cli, 'doctor', '--json', '--trust'], {
      cwd: dir,
      env: { ...process.env, PATH: `${realClaudeBin}:${process.env.PATH}`, IS_SANDBOX: '1' },
    }).toString();
    const report = JSON.parse(out);
    assert.deepEqual(report.sources.map((s: { path: string }) => s.path).sort(), ['.ralph', 'quantum.json']);
    assert.ok(
      report.agents.some((a: { name: string; version: string }) => a.name === 'claude' && a.version === '2.1.328'),
      out,
    );
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.gates, { source: 'command-policy', file: '.ralph/command-policy', tiers: ['basic'] });
    assert.equal(report.ok, true);
  });

  it('exits 1 when no gate is configured, as `ralph run` would refuse, and 0 once one is', () => {
    const dir = tempWorkspace({ 'RALPH_TASK.md': '- [ ] a\n' });
    const env = { ...process.env, PATH: `${realClaudeBin}:${process.env.PATH}`, IS_SANDBOX: '1' };
    const before = spawnSync(process.execPath, [cli, 'doctor', '--cwd', dir], { env });
    assert.equal(before.status, 1);
    assert.match(
      before.stdout.toString(),
      /Gates \(what verifies a claimed task\):\n {2}none: a plain `ralph run` refuses/,
    );
    assert.match(
      before.stdout.toString(),
      /NOT READY: `ralph run` would refuse: no gate is configured \(add a \[gates\]/,
    );
    fs.mkdirSync(path.join(dir, '.ralph'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.ralph', 'config.json'), JSON.stringify({ gates: { basic: 'true' } }));
    const after = spawnSync(process.execPath, [cli, 'doctor', '--cwd', dir, '--trust'], { env });
    assert.equal(after.status, 0, after.stdout.toString());
    assert.match(
      after.stdout.toString(),
      /Gates \(what verifies a claimed task\):\n {2}basic from \.ralph\/config\.json/,
    );
    assert.match(after.stdout.toString(), /OK: `ralph run` can start/);
  });

  it('reports a broken quantum.json under problems with line and column, without a stack trace', () => {
    const dir = tempWorkspace({
      'quantum.json': '{\n  "stories": [\n',
      '.ralph/command-policy': '[gates]\nbasic | true\n',
    });
    const r = spawnSync(process.execPath, [cli, 'doctor', '--json', '--trust', '--cwd', dir], {
      env: { ...process.env, PATH: `${realClaudeBin}:${process.env.PATH}`, IS_SANDBOX: '1' },
    });
    const report = JSON.parse(r.stdout.toString());
    assert.equal(report.problems.length, 1);
    assert.equal(report.problems[0].file, 'quantum.json');
    assert.equal(report.problems[0].line, 3);
    assert.equal(report.problems[0].column, 1);
    assert.doesNotMatch(r.stderr.toString() + r.stdout.toString(), /\n\s+at /);
    assert.equal(r.status, 0);
  });

  it('exits 1 when no agent CLI is on PATH', () => {
    const dir = tempWorkspace({ 'RALPH_TASK.md': '- [ ] a\n' });
    const r = spawnSync(process.execPath, [cli, 'doctor', '--cwd', dir], {
      env: { ...process.env, PATH: path.dirname(process.execPath) },
    });
    assert.equal(r.status, 1);
    assert.match(r.stdout.toString(), /NOT READY/);
  });

  it('exits 1 when the folder holds no task source', async () => {
    const report = await buildDoctorReport(tempWorkspace({}), { pathEnv: realClaudeBin });
    assert.equal(report.ok, false);
    assert.match(formatDoctorReport(report), /none found/);
  });
});

describe('ralph doctor: what counts', () => {
  it('does not count .ralph/ alone as a task source', async () => {
    const dir = tempWorkspace({ '.ralph/runs/': '' });
    const report = await buildDoctorReport(dir, { pathEnv: realClaudeBin });
    assert.equal(report.ok, false);
  });

  it('reports a .ralph/config.json that does not parse, and a quantum.json that breaks the schema', async () => {
    const dir = tempWorkspace({
      '.ralph/config.json': '{\n  "maxIterations": "ten"\n}\n',
      'quantum.json': '{\n  "stories": [\n    { "id": "US-1", "title": "t", "status": 5 }\n  ]\n}\n',
    });
    const report = await buildDoctorReport(dir, { pathEnv: realClaudeBin });
    assert.deepEqual(report.problems.map((p) => [p.file, p.line]).sort(), [
      ['.ralph/config.json', 2],
      ['quantum.json', 3],
    ]);
  });

  it('finds the agent CLI the configuration names by path', async () => {
    const bin = stubBin('my-claude', 'echo "3.0.0 (Claude Code)"');
    const dir = tempWorkspace({
      'RALPH_TASK.md': '- [ ] a\n',
      '.ralph/config.json': JSON.stringify({ claudePath: path.join(bin, 'my-claude'), gates: { basic: 'true' } }),
    });
    const report = await buildDoctorReport(dir, {
      pathEnv: path.dirname(process.execPath),
      trustOverride: '--trust',
      uid: 1000,
    });
    assert.deepEqual(
      report.agents.map((a) => [a.name, a.version]),
      [['my-claude', '3.0.0']],
    );
    assert.equal(report.ok, true);
  });
});

describe('ralph doctor: the agent ralph run would start', () => {
  it('is not ready when the configured claudePath is not an executable, and says so', async () => {
    const dir = tempWorkspace({
      'RALPH_TASK.md': '- [ ] a\n',
      '.ralph/config.json': '{"claudePath": "/nonexistent/claude"}',
    });
    const report = await buildDoctorReport(dir, { pathEnv: realClaudeBin, trustOverride: '--trust' });
    assert.equal(report.ok, false, 'a claude on PATH does not help: ralph run uses the configured path');
    assert.match(
      report.problems.map((p) => p.message).join('\n'),
      /claudePath "\/nonexistent\/claude" is not an executable/,
    );
  });

  it('names a default agent path as the default when .ralph/config.json sets other keys (never a problem of the file)', async () => {
    const dir = tempWorkspace({
      'RALPH_TASK.md': '- [ ] a\n',
      '.ralph/config.json': '{"agent": "codex", "maxIterations": 3}',
    });
    const report = await buildDoctorReport(dir, { pathEnv: path.dirname(process.execPath), trustOverride: '--trust' });
    assert.deepEqual(report.selectedAgent, { key: 'codexPath', value: 'codex', source: 'default', found: false });
    assert.deepEqual(
      report.problems.filter((p) => p.file === '.ralph/config.json'),
      [],
      'codexPath is not in the file',
    );
    assert.match(report.warnings.join('\n'), /codexPath "codex" is not an executable on PATH.*\(the default codexPath/);
  });

  it('resolves a relative claudePath against the workspace folder', async () => {
    const dir = tempWorkspace({
      'RALPH_TASK.md': '- [ ] a\n',
      '.ralph/config.json': '{"claudePath": "bin/claude", "gates": {"basic": "true"}}',
      'bin/claude': '#!/bin/sh\necho "2.0.0 (Claude Code)"\n',
    });
    fs.chmodSync(path.join(dir, 'bin/claude'), 0o755);
    const report = await buildDoctorReport(dir, {
      pathEnv: path.dirname(process.execPath),
      trustOverride: '--trust',
      uid: 1000,
    });
    assert.equal(report.ok, true, JSON.stringify(report.problems));
    assert.ok(report.agents.some((a) => a.path === path.join(dir, 'bin/claude') && a.version === '2.0.0'));
  });
});

describe('ralph doctor: attribution and verdict (new-user try, session 3)', () => {
  it('without .ralph/config.json, a missing default claude is named as the default (no file problem) and the verdict names the agent only', () => {
    const dir = tempWorkspace({
      'quantum.json': JSON.stringify({
        project: 'p',
        stories: [{ id: 'US-1', title: 't', status: 'pending', priority: 1, dependsOn: [] }],
      }),
    });
    const r = spawnSync(process.execPath, [cli, 'doctor', '--cwd', dir], {
      env: { ...process.env, PATH: path.dirname(process.execPath), IS_SANDBOX: '1' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1);
    assert.doesNotMatch(r.stdout, /^ {2}\.ralph\/config\.json/m, 'no problem of a file that does not exist');
    assert.match(
      r.stdout,
      /claudePath "claude" is not an executable on PATH: `ralph run` cannot start the agent \(the default claudePath/,
    );
    assert.match(
      r.stdout,
      /NOT READY: needs the agent `ralph run` would start \(claudePath "claude", the default\); then `ralph run` would refuse: no gate is configured [^\n]*\.\n$/,
    );
    assert.doesNotMatch(r.stdout, /needs a task source/);
  });

  it('warns when running as root with bypassPermissions and no IS_SANDBOX', async () => {
    const dir = tempWorkspace({ 'RALPH_TASK.md': '- [ ] a\n' });
    const report = await buildDoctorReport(dir, {
      pathEnv: realClaudeBin,
      uid: 0,
      env: { ...process.env, IS_SANDBOX: '' },
    });
    assert.match(formatDoctorReport(report), /Warnings:\n {2}running as root: the Claude CLI refuses/);
    assert.equal(report.ok, false, 'ralph run would fail at once');
    assert.match(report.refusals.join('\n'), /refuses bypassPermissions as root/);
    const sandboxed = await buildDoctorReport(dir, {
      pathEnv: realClaudeBin,
      uid: 0,
      env: { ...process.env, IS_SANDBOX: '1' },
    });
    assert.deepEqual(sandboxed.warnings, []);
    assert.doesNotMatch(sandboxed.refusals.join('\n'), /as root/);
  });
});
