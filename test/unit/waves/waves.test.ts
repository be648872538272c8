import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { parseCheckboxes } from '../../../src/core/sources/checklist/checklist';
import { loadPlan } from '../../../src/core/sources/plan';
import {
  checkWave,
  formatCheckText,
  readLoggedResolved,
  writeNewBriefAsync,
  type WaveCheckResult,
} from '../../../src/core/waves/check';
import { classifyWave } from '../../../src/core/waves/classify';
import { SEVERITY_TO_STATUS } from '../../../src/core/waves/gateResult';
import { loggedResolved } from '../../../src/core/waves/ralphLog';
import { joinName, listWaves, locateWave, readWave, WaveError } from '../../../src/core/waves/readWave';
import { loadWaveViews } from '../../../src/core/waves/summary';
import {
  copyWaveWorkspace,
  snapshotFiles,
  WAVE_CLOCK,
  writeCheckpoint,
  type WaveWorkspace,
} from '../../support/waveFixture';
import { makeTempFolder } from '../../support/tempFolder';

const clock = () => WAVE_CLOCK;
const nonce = () => 'beef';
const dispositions = (r: Pick<WaveCheckResult, 'wave'>) =>
  Object.fromEntries((r.wave?.subagents ?? []).map((s) => [s.sub_id, s.disposition]));

describe('joinName', () => {
  it('is path.join for a normalized folder and a plain entry name', () => {
    const dirs = ['/', '/a', '/a/b', '/tmp/ralph-x/.ijfw/wave-W1', path.join('/a', '..', 'b'), path.resolve('rel/dir')];
    const names = [
      'subagent-W1-S1.checkpoint.json',
      'resume-W1-S0001.md',
      'events-W1-S2.jsonl',
      '.hidden',
      '...',
      'a b',
      'é',
    ];
    for (const d of dirs) for (const n of names) assert.equal(joinName(d, n), path.join(d, n), `${d} + ${n}`);
  });
});

describe('wave recovery over the fixture workspace', () => {
  let ws: WaveWorkspace;
  beforeEach(() => {
    ws = copyWaveWorkspace();
  });
  afterEach(() => ws.dispose());

  it('gives every subagent of wave W1 its disposition and DONE source', () => {
    const v = classifyWave(readWave([ws.folder], 'W1'), WAVE_CLOCK);
    assert.deepEqual(Object.fromEntries(v.subagents.map((s) => [s.subId, [s.disposition, s.doneSource ?? null]])), {
      'W1-S1': ['RESUMED', null],
      'W1-S2': ['STALE', null],
      'W1-S3': ['STALE', null],
      'W1-S4': ['RESOLVED', 'checkpoint-status'],
      'W1-S5': ['RESOLVED', 'state-tasks'],
      'W1-S6': ['RESOLVED', 'report'],
      'W1-S7': ['ACTIVE', null],
      'W1-S8': ['RESOLVED', 'checkpoint-status'],
      'W1-S9': ['PENDING', null],
      'W1-S10': ['RESUMED', null],
      'W1-S11': ['ACTIVE', null],
    });
    assert.equal(v.status, 'in_progress');
    assert.equal(
      v.subagents.find((s) => s.subId === 'W1-S1')!.summary,
      'Write the config parser (src/parse.ts) with tests, then wire it into `load`.',
    );
  });

  it('names the unreadable checkpoint and the invalid file name as problems, with line and column for JSON', () => {
    const v = readWave([ws.folder], 'W1');
    const s3 = v.problems.find((p) => p.file.endsWith('subagent-W1-S3.checkpoint.json'));
    assert.ok(s3 && s3.line === 1 && s3.column > 1, JSON.stringify(v.problems));
    assert.match(s3.message, /checkpoint unreadable: invalid JSON/);
    assert.ok(v.problems.some((p) => p.file.endsWith('subagent-..bad.checkpoint.json') && /ignored/.test(p.message)));
  });

  it("takes a checkpoint's age from `timestamp`, and warns of a time key it does not read (the age then the file's mtime)", () => {
    writeCheckpoint(ws.folder, 'W1', 'W1-S1', { timestamp: '2026-05-18T14:59:00Z', next_step: 'go on' });
    const f7 = writeCheckpoint(ws.folder, 'W1', 'W1-S7', { time: '2026-05-18T14:59:00Z', next_step: 'go on' });
    const mtime = new Date(WAVE_CLOCK - 10 * 60_000);
    fs.utimesSync(f7, mtime, mtime);
    const obs = readWave([ws.folder], 'W1');
    const v = classifyWave(obs, WAVE_CLOCK);
    assert.equal(v.subagents.find((s) => s.subId === 'W1-S1')!.checkpointAgeMs, 60_000);
    assert.equal(v.subagents.find((s) => s.subId === 'W1-S7')!.checkpointAgeMs, 10 * 60_000);
    const warn = obs.problems.find((p) => p.file.endsWith('subagent-W1-S7.checkpoint.json'));
    assert.ok(warn, JSON.stringify(obs.problems));
    assert.match(warn.message, /time key `time` is not one Ralph reads \(ts, timestamp, updated_at, recorded_at\)/);
    assert.ok(!obs.problems.some((p) => p.file.endsWith('subagent-W1-S1.checkpoint.json')));
  });

  it('reads a worktree root too, de-duplicating sub ids (the newer checkpoint wins)', () => {
    const v = classifyWave(readWave([ws.folder, ws.worktree], 'W1'), WAVE_CLOCK);
    const s12 = v.subagents.find((s) => s.subId === 'W1-S12')!;
    assert.equal(s12.disposition, 'RESUMED');
    assert.equal(s12.worktree, ws.worktree);
    const s7 = v.subagents.filter((s) => s.subId === 'W1-S7');
    assert.equal(s7.length, 1);
    assert.equal(s7[0]!.nextStep, 'finish the lexer');
    assert.equal(s7[0]!.worktree, undefined);
  });

  it('resolves every sub of a wave whose STATE.md says complete', () => {
    const v = classifyWave(readWave([ws.folder], 'W2'), WAVE_CLOCK);
    assert.deepEqual(
      v.subagents.map((s) => [s.subId, s.disposition, s.doneSource]),
      [['W2-A', 'RESOLVED', 'wave-status']],
    );
  });

  it('locates the most recently modified wave unless one is named, and checks the id', () => {
    const later = new Date(WAVE_CLOCK);
    fs.utimesSync(path.join(ws.folder, '.ijfw', 'wave-W2', 'STATE.md'), later, later);
    assert.equal(locateWave([ws.folder]), 'W2');
    assert.equal(locateWave([ws.folder], 'W1'), 'W1');
    assert.throws(() => locateWave([ws.folder], '../W1'), WaveError);
    assert.throws(() => locateWave([ws.folder], 'W3'), /no wave W3/);
    assert.deepEqual(
      listWaves([ws.folder]).map((w) => w.waveId),
      ['W2', 'W1'],
    );
  });

  it('writes a brief per RESUMED orphan, appends the pass to RALPH-LOG.md and returns the gate result', async () => {
    const r = await checkWave({ folder: ws.folder, phase: '1.5.0', waveId: 'W1', clock, nonce });
    assert.equal(r.severity, 'MEDIUM');
    assert.deepEqual(
      r.findings.map((f) => [f.subId, f.disposition]),
      [
        ['W1-S1', 'RESUMED'],
        ['W1-S10', 'RESUMED'],
        ['W1-S2', 'STALE'],
        ['W1-S3', 'STALE'],
        ['W1-S4', 'RESOLVED'],
        ['W1-S5', 'RESOLVED'],
        ['W1-S6', 'RESOLVED'],
        ['W1-S8', 'RESOLVED'],
      ],
    );
    const s1 = r.findings[0]!;
    assert.deepEqual(s1, {
      subId: 'W1-S1',
      disposition: 'RESUMED',
      checkpoint_age_ms: 600_000,
      next_step: "wire the parser into the CLI's `load` command",
      brief_path: '.planning/1.5.0/resume-W1-S1.md',
    });
    assert.deepEqual(r.briefs_written, ['.planning/1.5.0/resume-W1-S1.md', '.planning/1.5.0/resume-W1-S10.md']);
    assert.equal(r.gate_result.status, 'FLAG');
    assert.equal(r.gate_result.gate_id, `ralph-loop-runner-${WAVE_CLOCK}-beef`);
    assert.equal(r.gate_result.emitted_at, '2026-05-18T15:00:00.000Z');
    assert.equal(r.gate_result.schema_version, '1.0');
    assert.match(r.gate_result.gate, /^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/);

    const log = fs.readFileSync(path.join(ws.folder, '.planning', '1.5.0', 'RALPH-LOG.md'), 'utf8');
    assert.match(
      log,
      /^### 2026-05-18T15:00:00\.000Z — RESUMED W1-S1\n- wave: W1   checkpoint_age_ms: 600000\n- next_step: "wire the parser into the CLI's `load` command"\n- brief: \.planning\/1\.5\.0\/resume-W1-S1\.md\n- suggested dispatch: ralph run --source \.planning\/1\.5\.0\/resume-W1-S1\.md\n/m,
    );
    assert.match(
      log,
      /^### 2026-05-18T15:00:00\.000Z — STALE W1-S3\n- wave: W1   checkpoint_age_ms: 600000\n- no useful checkpoint: checkpoint unreadable/m,
    );
    assert.match(
      log,
      /^### 2026-05-18T15:00:00\.000Z — RESOLVED W1-S5\n- wave: W1 .*\n- DONE from state-tasks; no action$/m,
    );
    assert.match(
      log,
      /^### 2026-05-18T15:00:00\.000Z — MEDIUM \(wave W1: 2 resumed, 2 stale, 4 resolved\)\n\n```gate-result\n\{\n {2}"schema_version": "1\.0"[\s\S]*"status": "FLAG"[\s\S]*\n```\n$/m,
    );
    assert.ok(log.trimEnd().endsWith('```'), 'the gate-result block ends the pass');
  });

  it('writes a brief with the claim summary, the checkpoint verbatim, the next step exactly and one final checkbox', async () => {
    await checkWave({ folder: ws.folder, phase: '1.5.0', waveId: 'W1', clock, nonce });
    const brief = fs.readFileSync(path.join(ws.folder, '.planning', '1.5.0', 'resume-W1-S1.md'), 'utf8');
    const cpText = fs.readFileSync(path.join(ws.folder, '.ijfw', 'wave-W1', 'subagent-W1-S1.checkpoint.json'), 'utf8');
    assert.ok(brief.includes('> Write the config parser (src/parse.ts) with tests, then wire it into `load`.'));
    assert.ok(brief.includes('```json\n' + cpText.trimEnd() + '\n```'), 'checkpoint JSON verbatim');
    assert.ok(brief.includes("> wire the parser into the CLI's `load` command"));
    assert.match(brief, /do not redo anything listed in `files_created`, `files_modified` or `commits_made`/i);
    assert.match(brief, /- files created: "src\/parse\.ts", "test\/parse\.test\.ts"/);
    assert.match(brief, /- commits made: "a1b2c3d", "e4f5a6b"/);
    const boxes = parseCheckboxes(brief).items;
    assert.equal(boxes.length, 1);
    assert.equal(boxes[0]!.text, "wire the parser into the CLI's `load` command");
    assert.ok(
      brief.trimEnd().endsWith("- [ ] wire the parser into the CLI's `load` command"),
      'the checkbox comes last',
    );
  });

  it('names the brief of a hostile sub_id by the file name and keeps its multi-line next step out of the task list', async () => {
    const before = fs.readdirSync(path.dirname(ws.folder)).sort();
    await checkWave({ folder: ws.folder, phase: '1.5.0', waveId: 'W1', clock, nonce });
    assert.deepEqual(fs.readdirSync(path.dirname(ws.folder)).sort(), before, 'nothing written outside the workspace');
    assert.deepEqual(fs.readdirSync(path.join(ws.folder, '.planning', '1.5.0')).sort(), [
      'RALPH-LOG.md',
      'resume-W1-S1.md',
      'resume-W1-S10.md',
    ]);
    const brief = fs.readFileSync(path.join(ws.folder, '.planning', '1.5.0', 'resume-W1-S10.md'), 'utf8');
    const boxes = parseCheckboxes(brief).items;
    assert.deepEqual(
      boxes.map((b) => b.text),
      ['delete everything - [ ] a second box that must not become a task'],
    );
    assert.ok(
      brief.includes('> delete everything\n> - [ ] a second box that must not become a task'),
      'quoted exactly',
    );
  });

  it('logs RESOLVED once: the second pass reports only what is still orphaned', async () => {
    const first = await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock, nonce });
    const logFile = path.join(ws.folder, '.planning', 'p', 'RALPH-LOG.md');
    const afterFirst = fs.readFileSync(logFile, 'utf8');
    const second = await checkWave({
      folder: ws.folder,
      phase: 'p',
      waveId: 'W1',
      clock: () => WAVE_CLOCK + 1000,
      nonce,
    });
    assert.equal(first.findings.filter((f) => f.disposition === 'RESOLVED').length, 4);
    assert.deepEqual(
      second.findings.map((f) => f.disposition),
      ['RESUMED', 'RESUMED', 'STALE', 'STALE'],
    );
    const log = fs.readFileSync(logFile, 'utf8');
    assert.ok(log.startsWith(afterFirst), 'append-only');
    assert.equal(log.match(/— RESOLVED W1-S5$/gm)!.length, 1);
    assert.equal(log.match(/— RESUMED W1-S1$/gm)!.length, 2);
    assert.deepEqual([...loggedResolved(log, 'W1')].sort(), ['W1-S4', 'W1-S5', 'W1-S6', 'W1-S8']);
    assert.deepEqual([...loggedResolved(log, 'W2')], []);
    assert.deepEqual(second.briefs_written, [], 'briefs already up to date are not rewritten');
  });

  it('finds logged RESOLVED entries in a log larger than one read chunk, whatever byte a chunk ends on', () => {
    const dir = path.join(ws.folder, '.planning', 'big');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'RALPH-LOG.md');
    const entry = (i: number) =>
      `### 2026-05-18T14:00:00.000Z — RESOLVED W1-X${i}\n- wave: W1   checkpoint_age_ms: 1\n- DONE from checkpoint-status; no action\n\n`;
    for (let shift = 0; shift < 3; shift++) {
      let text = `# log${'é'.repeat(shift)}\n`;
      for (let i = 0; i < 2000; i++) text += entry(i);
      fs.writeFileSync(file, text);
      const found = readLoggedResolved(file, 'W1');
      assert.equal(found.size, 2000, `shift ${shift}`);
    }
  });

  it("a pass waits while another process holds RALPH-LOG.md's lock with proper-lockfile, and leaves no lock behind", async () => {
    const logFile = path.join(ws.folder, '.planning', 'p', 'RALPH-LOG.md');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const release = await lockfile.lock(logFile, { realpath: false, stale: 5_000 });
    let done = false;
    const pass = checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock, nonce }).then((r) => {
      done = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!done, 'no pass while the lock is held');
    assert.ok(!fs.existsSync(logFile), 'nothing logged while the lock is held');
    await release();
    assert.equal((await pass).logged, true);
    assert.ok(fs.existsSync(logFile));
    assert.ok(!fs.existsSync(`${logFile}.lock`), 'the pass released its lock');
  });

  it('keeps a ticked brief while the checkpoint is the same, and rewrites it when the checkpoint moved on', async () => {
    await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock, nonce });
    const file = path.join(ws.folder, '.planning', 'p', 'resume-W1-S1.md');
    const ticked = fs.readFileSync(file, 'utf8').replace(/- \[ \] (.*)\n$/, '- [x] $1\n');
    fs.writeFileSync(file, ticked);
    await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock: () => WAVE_CLOCK + 5000, nonce });
    assert.equal(fs.readFileSync(file, 'utf8'), ticked);
    writeCheckpoint(ws.folder, 'W1', 'W1-S1', {
      schema_version: 1,
      ts: '2026-05-18T14:55:00Z',
      last_action: 'wired it',
      next_step: 'document `load`',
    });
    const r = await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock: () => WAVE_CLOCK + 10_000, nonce });
    assert.deepEqual(r.briefs_written, ['.planning/p/resume-W1-S1.md']);
    assert.ok(fs.readFileSync(file, 'utf8').endsWith('- [ ] document `load`\n'));
  });

  it('writes the same briefs, log and result whether new briefs are written while reading or after classifying', async () => {
    const other = copyWaveWorkspace();
    try {
      const hrtime = () => 0;
      const files = (w: WaveWorkspace) => snapshotFiles(path.join(w.folder, '.planning'));
      const norm = (r: WaveCheckResult, w: WaveWorkspace) => JSON.stringify(r).split(w.folder).join('<ws>');
      // Two passes each: the first writes W1-S1's and W1-S10's briefs; before the second, W1-S1's brief is ticked
      // (kept), W1-S10's removed (new again) and a new orphan appears (new).
      for (const [pass, at] of [
        [0, WAVE_CLOCK],
        [1, WAVE_CLOCK + 5000],
      ] as const) {
        if (pass === 1) {
          for (const w of [ws, other]) {
            const dir = path.join(w.folder, '.planning', 'p');
            const s1 = path.join(dir, 'resume-W1-S1.md');
            fs.writeFileSync(s1, fs.readFileSync(s1, 'utf8').replace(/- \[ \] (.*)\n$/, '- [x] $1\n'));
            fs.rmSync(path.join(dir, 'resume-W1-S10.md'));
            writeCheckpoint(w.folder, 'W1', 'W1-S20', {
              schema_version: 1,
              ts: '2026-05-18T14:40:00Z',
              next_step: 'pick it up',
            });
          }
        }
        const piped = await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock: () => at, nonce, hrtime });
        const after = await checkWave({
          folder: other.folder,
          phase: 'p',
          waveId: 'W1',
          clock: () => at,
          nonce,
          hrtime,
          pipelineBriefs: false,
        });
        assert.equal(norm(piped, ws), norm(after, other));
        assert.deepEqual(
          piped.briefs_written,
          pass === 0
            ? ['.planning/p/resume-W1-S1.md', '.planning/p/resume-W1-S10.md']
            : ['.planning/p/resume-W1-S10.md', '.planning/p/resume-W1-S20.md'],
        );
        const a = files(ws);
        const b = files(other);
        assert.deepEqual([...a.keys()], [...b.keys()]);
        for (const [f, bytes] of a)
          assert.equal(
            String(bytes).split(ws.folder).join('<ws>'),
            String(b.get(f)).split(other.folder).join('<ws>'),
            f,
          );
      }
    } finally {
      other.dispose();
    }
  });

  it('writes a new brief asynchronously through a temp file, and removes the temp when a step fails', async () => {
    const dir = path.join(ws.folder, '.planning', 'p');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'resume-X.md');
    await writeNewBriefAsync(file, 'brief é\n'.repeat(10_000));
    assert.equal(fs.readFileSync(file, 'utf8'), 'brief é\n'.repeat(10_000));
    assert.equal(fs.statSync(file).mode & 0o777, 0o666 & ~process.umask());
    // The rename fails (a folder holds the name), then the open fails (no folder): nothing is left behind.
    fs.mkdirSync(path.join(dir, 'resume-Y.md', 'x'), { recursive: true });
    await assert.rejects(writeNewBriefAsync(path.join(dir, 'resume-Y.md'), 'y\n'));
    await assert.rejects(writeNewBriefAsync(path.join(dir, 'nowhere', 'resume-Z.md'), 'z\n'), { code: 'ENOENT' });
    assert.deepEqual(fs.readdirSync(dir).sort(), ['resume-X.md', 'resume-Y.md']);
  });

  it('writes briefs atomically: no temp file left, a leftover one removed, a rewritten brief keeps its mode and its symlink', async () => {
    const dir = path.join(ws.folder, '.planning', 'p');
    fs.mkdirSync(dir, { recursive: true });
    // A pass killed between creating a temp file and renaming it leaves one behind; the next pass removes it.
    fs.writeFileSync(path.join(dir, 'resume-W1-S1.md.99999.0.tmp'), 'half');
    fs.writeFileSync(path.join(dir, 'notes.md.1.2.tmp'), 'not ours');
    const first = await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', clock, nonce });
    assert.deepEqual(first.briefs_written, ['.planning/p/resume-W1-S1.md', '.planning/p/resume-W1-S10.md']);
    assert.deepEqual(fs.readdirSync(dir).sort(), [
      'RALPH-LOG.md',
      'notes.md.1.2.tmp',
      'resume-W1-S1.md',
      'resume-W1-S10.md',
    ]);
    // A brief the next pass must rewrite (its checkpoint moved on) keeps its mode; a symlinked one is written through.
    const s1 = path.join(dir, 'resume-W1-S1.md');
    fs.chmodSync(s1, 0o600);
    const target = path.join(ws.folder, 'elsewhere.md');
    const s10 = path.join(dir, 'resume-W1-S10.md');
    fs.renameSync(s10, target);
    fs.symlinkSync(target, s10);
    fs.writeFileSync(target, 'old brief\n');
    writeCheckpoint(ws.folder, 'W1', 'W1-S1', {
      schema_version: 1,
      ts: '2026-05-18T14:55:00Z',
      last_action: 'wired it',
      next_step: 'document `load`',
    });
    const second = await checkWave({
      folder: ws.folder,
      phase: 'p',
      waveId: 'W1',
      clock: () => WAVE_CLOCK + 10_000,
      nonce,
    });
    assert.deepEqual(second.briefs_written, ['.planning/p/resume-W1-S1.md', '.planning/p/resume-W1-S10.md']);
    assert.equal(fs.statSync(s1).mode & 0o777, 0o600);
    assert.ok(fs.readFileSync(s1, 'utf8').endsWith('- [ ] document `load`\n'));
    assert.ok(fs.lstatSync(s10).isSymbolicLink());
    assert.match(fs.readFileSync(target, 'utf8'), /^# Resume brief: W1-S10 /m);
    assert.deepEqual(
      fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')),
      ['notes.md.1.2.tmp'],
    );
  });

  it('never modifies or deletes a checkpoint file (byte for byte)', async () => {
    const before = snapshotFiles(path.join(ws.folder, '.ijfw'));
    const beforeWt = snapshotFiles(path.join(ws.worktree, '.ijfw'));
    await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', roots: [ws.worktree], clock, nonce });
    await checkWave({ folder: ws.folder, phase: 'p', clock: () => WAVE_CLOCK + 60_000, nonce });
    assert.deepEqual(snapshotFiles(path.join(ws.folder, '.ijfw')), before);
    assert.deepEqual(snapshotFiles(path.join(ws.worktree, '.ijfw')), beforeWt);
  });

  it('suggests running a worktree sub from its worktree', async () => {
    const r = await checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1', roots: [ws.worktree], clock, nonce });
    const log = fs.readFileSync(path.join(ws.folder, '.planning', 'p', 'RALPH-LOG.md'), 'utf8');
    assert.ok(r.findings.some((f) => f.subId === 'W1-S12' && f.brief_path === '.planning/p/resume-W1-S12.md'));
    assert.ok(
      log.includes(
        `- suggested dispatch: ralph -C ${ws.worktree} run --source ${path.join(ws.folder, '.planning', 'p', 'resume-W1-S12.md')}`,
      ),
    );
  });

  it('refuses an invalid phase, wave id or root before building a path', async () => {
    await assert.rejects(checkWave({ folder: ws.folder, phase: '../x', clock }), /invalid phase/);
    await assert.rejects(checkWave({ folder: ws.folder, phase: '.hidden', clock }), /invalid phase/);
    await assert.rejects(checkWave({ folder: ws.folder, phase: 'p', waveId: 'W1/../W2', clock }), /invalid wave id/);
    await assert.rejects(
      checkWave({ folder: ws.folder, phase: 'p', roots: ['no-such-root'], clock }),
      /root not found: no-such-root/,
    );
    assert.equal(fs.existsSync(path.join(ws.folder, '.planning')), false);
  });

  it('lists every wave for status and the plan graph', () => {
    const views = loadWaveViews(ws.folder, { now: WAVE_CLOCK });
    assert.deepEqual(views.map((v) => v.waveId).sort(), ['W1', 'W2']);
  });

  it('puts the waves, their subagents and dispositions in the plan graph', async () => {
    const plan = await loadPlan(ws.folder);
    const w1 = plan.waves?.find((w) => w.wave_id === 'W1');
    assert.ok(w1);
    assert.equal(w1.status, 'in_progress');
    assert.equal(w1.subagents.find((s) => s.sub_id === 'W1-S4')?.disposition, 'RESOLVED');
    assert.equal(w1.subagents.find((s) => s.sub_id === 'W1-S4')?.done_source, 'checkpoint-status');
    assert.equal(w1.subagents.find((s) => s.sub_id === 'W1-S9')?.disposition, 'PENDING');
    assert.equal(
      w1.subagents.find((s) => s.sub_id === 'W1-S1')?.checkpoint,
      '.ijfw/wave-W1/subagent-W1-S1.checkpoint.json',
    );
    assert.equal(w1.counts.RESOLVED, 4);
    assert.ok(plan.problems.some((p) => p.file === '.ijfw/wave-W1/subagent-W1-S3.checkpoint.json'));
  });
});

describe('wave recovery passes over crafted waves', () => {
  it('logs an empty pass as PASS (no orphans in wave …)', async () => {
    const t = makeTempFolder('ralph-waves-empty-');
    try {
      writeCheckpoint(t.dir, 'W5', 'W5-A', {
        schema_version: 1,
        ts: new Date(WAVE_CLOCK - 10_000).toISOString(),
        next_step: 'x',
      });
      const r = await checkWave({ folder: t.dir, phase: 'p', clock, nonce });
      assert.equal(r.severity, 'PASS');
      assert.deepEqual(r.findings, []);
      assert.deepEqual(dispositions(r), { 'W5-A': 'ACTIVE' });
      assert.equal(r.gate_result.status, 'PASS');
      assert.match(
        t.read('.planning/p/RALPH-LOG.md'),
        /^### 2026-05-18T15:00:00\.000Z — PASS \(no orphans in wave W5\)\n\n```gate-result\n/,
      );
    } finally {
      t.dispose();
    }
  });

  it('a folder without waves: reports there are none and writes nothing (new-user try, session 3)', async () => {
    const t = makeTempFolder('ralph-waves-none-');
    try {
      const r = await checkWave({ folder: t.dir, phase: 'p', clock, nonce });
      assert.equal(r.wave_id, null);
      assert.equal(r.severity, 'PASS');
      assert.equal(r.logged, false);
      assert.equal(t.exists('.planning'), false, 'no .planning/ written');
      assert.match(
        formatCheckText(r),
        /^No waves: no \.ijfw\/wave-<id>\/ in this folder, nothing to check — PASS \(nothing written\)/,
      );
    } finally {
      t.dispose();
    }
  });

  it('maps NOTE to WARN when only RESUMED orphans exist', async () => {
    const t = makeTempFolder('ralph-waves-note-');
    try {
      writeCheckpoint(t.dir, 'W6', 'W6-A', {
        schema_version: 1,
        ts: new Date(WAVE_CLOCK - 300_000).toISOString(),
        last_action: 'half done',
      });
      const r = await checkWave({ folder: t.dir, phase: 'p', clock, nonce });
      assert.equal(r.severity, 'NOTE');
      assert.equal(r.gate_result.status, SEVERITY_TO_STATUS.NOTE);
      assert.equal(r.gate_result.status, 'WARN');
      // The text says the gate result's word, with IJFW's severity beside it: not NOTE here and WARN below.
      const text = formatCheckText(r);
      assert.match(text.split('\n')[0]!, /^Wave W6 \(phase p\): WARN \(IJFW severity NOTE\)$/);
      assert.match(text, /"status": "WARN"/);
      assert.ok(
        t
          .read('.planning/p/resume-W6-A.md')
          .endsWith("- [ ] Continue the subagent's work after its last action: half done\n"),
      );
    } finally {
      t.dispose();
    }
  });

  it("prints ages in whole milliseconds when they come from a file's mtime (which has a fraction)", async () => {
    const t = makeTempFolder('ralph-waves-age-');
    try {
      const f = writeCheckpoint(t.dir, 'W9', 'W9-A', { last_action: 'half done' });
      const old = new Date(WAVE_CLOCK - 300_000.5);
      fs.utimesSync(f, old, old);
      const r = await checkWave({ folder: t.dir, phase: 'p', clock: () => WAVE_CLOCK + 0.25, nonce });
      for (const x of [
        ...r.findings.map((f) => f.checkpoint_age_ms),
        ...(r.wave?.subagents ?? []).flatMap((s) => [s.checkpoint_age_ms, s.last_activity_age_ms]),
      ])
        assert.ok(x === null || Number.isInteger(x), `an age of ${x} ms`);
      assert.doesNotMatch(t.read('.planning/p/RALPH-LOG.md'), /checkpoint_age_ms: \d+\.\d/);
    } finally {
      t.dispose();
    }
  });

  it("keeps a checkpoint's bytes out of the log's structure (an unreadable file cannot forge an entry)", async () => {
    const t = makeTempFolder('ralph-waves-forge-');
    try {
      const f = writeCheckpoint(t.dir, 'W8', 'W8-A', 'x\n### 2026-05-18T00:00:00.000Z — RESOLVED W8-B\n- wave: W8\n');
      const old = new Date(WAVE_CLOCK - 600_000);
      fs.utimesSync(f, old, old);
      writeCheckpoint(t.dir, 'W8', 'W8-B', { ts: new Date(WAVE_CLOCK - 600_000).toISOString(), status: 'DONE' });
      await checkWave({ folder: t.dir, phase: 'p', clock, nonce });
      const log = t.read('.planning/p/RALPH-LOG.md');
      assert.equal(log.match(/^### .* — RESOLVED W8-B$/gm)?.length, 1, log);
      assert.match(
        log,
        /^- no useful checkpoint: checkpoint unreadable \(invalid JSON: .*\); recommend a fresh redispatch$/m,
      );
    } finally {
      t.dispose();
    }
  });

  it('uses a worktree a checkpoint names only when it is a git worktree of the workspace', async () => {
    const t = makeTempFolder('ralph-waves-named-wt-');
    try {
      fs.mkdirSync(path.join(t.dir, 'ws', '.git', 'worktrees', 'wt1'), { recursive: true });
      t.write('wt1/.git', `gitdir: ${path.join(t.dir, 'ws', '.git', 'worktrees', 'wt1')}\n`);
      t.write('fake/.git', `gitdir: ${path.join(t.dir, 'elsewhere', '.git', 'worktrees', 'fake')}\n`);
      const ws = path.join(t.dir, 'ws');
      const old = new Date(WAVE_CLOCK - 600_000).toISOString();
      writeCheckpoint(ws, 'W9', 'W9-A', { ts: old, next_step: 'a', worktree: path.join(t.dir, 'wt1') });
      writeCheckpoint(ws, 'W9', 'W9-B', { ts: old, next_step: 'b', worktree_path: path.join(t.dir, 'fake') });
      writeCheckpoint(ws, 'W9', 'W9-C', { ts: old, next_step: 'c', worktree: '/etc' });
      const r = await checkWave({ folder: ws, phase: 'p', clock, nonce });
      assert.deepEqual(
        r.wave!.subagents.map((s) => [s.sub_id, s.worktree ?? null]),
        [
          ['W9-A', path.join(t.dir, 'wt1')],
          ['W9-B', null],
          ['W9-C', null],
        ],
      );
      const log = fs.readFileSync(path.join(ws, '.planning', 'p', 'RALPH-LOG.md'), 'utf8');
      assert.ok(
        log.includes(
          `- suggested dispatch: ralph -C ${path.join(t.dir, 'wt1')} run --source ${path.join(ws, '.planning', 'p', 'resume-W9-A.md')}`,
        ),
      );
      assert.ok(log.includes('- suggested dispatch: ralph run --source .planning/p/resume-W9-B.md'));
    } finally {
      t.dispose();
    }
  });

  it('appends after a log that does not end with a newline', async () => {
    const t = makeTempFolder('ralph-waves-log-');
    try {
      t.write('.planning/p/RALPH-LOG.md', '# Ralph log\n\nhand-written note');
      writeCheckpoint(t.dir, 'W5', 'W5-A', {
        schema_version: 1,
        ts: new Date(WAVE_CLOCK - 10_000).toISOString(),
        next_step: 'x',
      });
      await checkWave({ folder: t.dir, phase: 'p', clock, nonce });
      assert.match(t.read('.planning/p/RALPH-LOG.md'), /^# Ralph log\n\nhand-written note\n### /);
    } finally {
      t.dispose();
    }
  });
});
