import * as assert from 'node:assert/strict';
import { runCliInProcess } from '../../support/cli';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** New-user try (session 3): `waves check` in a folder without `.ijfw/` says so and writes nothing. */
describe('cli: ralph waves check without .ijfw/', () => {
  let t: TempFolder | undefined;
  afterEach(() => {
    t?.dispose();
    t = undefined;
  });

  it('reports no waves, exits 0 and writes no .planning/', async () => {
    t = makeTempFolder('ralph-nowaves-');
    const r = await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p1']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^No waves: no \.ijfw\/wave-<id>\/ in this folder, nothing to check — PASS \(nothing written\)/,
    );
    assert.equal(t.exists('.planning'), false);
    const j = (await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p1', '--json'])).json();
    assert.deepEqual([j.wave_id, j.severity, j.logged], [null, 'PASS', false]);
    assert.equal(t.exists('.planning'), false);
  });
});
