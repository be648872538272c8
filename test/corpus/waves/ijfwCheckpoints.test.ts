import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkpointDoneSource, isUseful, parseCheckpoint, subIdOfFile } from '../../../src/core/waves/checkpoint';
import { checkWave } from '../../../src/core/waves/check';
import { corpusDir, describeCorpus } from '../../support/corpus';
import { makeTempFolder } from '../../support/tempFolder';
import { snapshotFiles } from '../../support/waveFixture';

describeCorpus('IJFW checkpoints from the corpus (seed-systems.md §1.4)', () => {
  const dir = path.join(corpusDir, 'ijfw');
  const read = (name: string) => {
    const r = parseCheckpoint(fs.readFileSync(path.join(dir, name), 'utf8'));
    assert.ok(r.ok, name);
    return r.checkpoint;
  };

  it('reads every real checkpoint, each named by a valid subagent id', () => {
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.checkpoint.json'));
    assert.ok(files.length >= 4);
    for (const f of files) {
      assert.ok(subIdOfFile(f), f);
      assert.ok(read(f).timeMs !== undefined, `${f} has a time`);
    }
  });

  it('reads the flat v1 envelopes with their resume fields and no DONE', () => {
    const a = read('subagent-W12-A0-S01.checkpoint.json');
    assert.equal(a.shape, 'v1');
    assert.equal(a.timeMs, Date.parse('2026-05-18T14:39:05Z'));
    assert.equal(a.nextStep, 'merge via Phase D; S02 runtime-loop MCP will use this in canonical mode');
    assert.equal(a.commits.length, 6);
    assert.equal(checkpointDoneSource(a), undefined);
    assert.ok(isUseful(a));
    assert.equal(read('subagent-W11-A1.checkpoint.json').shape, 'v1');
  });

  it('reads the retroactive records as DONE, whatever their short subagent_id says', () => {
    for (const f of ['subagent-W12-A-S03.checkpoint.json', 'subagent-W12-F-F4.checkpoint.json']) {
      const cp = read(f);
      assert.equal(cp.shape, 'retro');
      assert.equal(checkpointDoneSource(cp), 'checkpoint-status');
      assert.notEqual(cp.claimedSubId, subIdOfFile(f), 'the file name, not subagent_id, is the identity');
    }
  });

  it('classifies a wave of the real checkpoints (copied, never modified) and writes a brief for the v1 orphan', async () => {
    const t = makeTempFolder('ralph-corpus-waves-');
    try {
      for (const f of ['subagent-W12-A0-S01.checkpoint.json', 'subagent-W12-A-S03.checkpoint.json']) {
        fs.mkdirSync(path.join(t.dir, '.ijfw', 'wave-W12'), { recursive: true });
        fs.copyFileSync(path.join(dir, f), path.join(t.dir, '.ijfw', 'wave-W12', f));
      }
      const before = snapshotFiles(path.join(t.dir, '.ijfw'));
      const r = await checkWave({ folder: t.dir, phase: '1.5.0', clock: () => Date.parse('2026-05-18T16:30:00Z') });
      assert.deepEqual(
        r.findings.map((f) => [f.subId, f.disposition]),
        [
          ['W12-A-S03', 'RESOLVED'],
          ['W12-A0-S01', 'RESUMED'],
        ],
      );
      assert.equal(r.severity, 'NOTE');
      assert.ok(
        t
          .read('.planning/1.5.0/resume-W12-A0-S01.md')
          .endsWith('- [ ] merge via Phase D; S02 runtime-loop MCP will use this in canonical mode\n'),
      );
      assert.deepEqual(snapshotFiles(path.join(t.dir, '.ijfw')), before);
    } finally {
      t.dispose();
    }
  });
});
