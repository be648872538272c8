import * as assert from 'node:assert/strict';
import { runCli } from '../../support/cli';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** New-user try (session 3): STALE TIER PIN names the file the pin is in. */
describe('cli: ralph gate STALE TIER PIN names the file of the pin', () => {
  let t: TempFolder | undefined;
  afterEach(() => {
    t?.dispose();
    t = undefined;
  });

  it('a pin in .ralph/config.json is named there (exit 64, nothing ran)', () => {
    t = makeTempFolder('ralph-pin-', { ralphDir: true });
    t.write('.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    const r = runCli(t.dir, ['gate', 'basic', '--', 'touch', 'ran']);
    assert.equal(r.code, 64, r.stdout + r.stderr);
    assert.match(
      r.stdout + r.stderr,
      /STALE TIER PIN: the basic gate is pinned to `true` in "gates" of \.ralph\/config\.json, not `touch ran`; nothing ran/,
    );
    assert.equal(t.exists('ran'), false);
  });
});
