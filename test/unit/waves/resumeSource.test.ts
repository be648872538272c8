import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { checklistAt } from '../../../src/core/sources/work/workSources';
import { makeTempFolder } from '../../support/tempFolder';

describe('a resume brief as a task source (ralph run --source <brief>)', () => {
  it('opens any markdown file as a checklist whose next item is its open box', async () => {
    const t = makeTempFolder('ralph-brief-source-');
    try {
      t.write('.planning/p/resume-W1-A.md', '# Resume brief\n\n> - [ ] quoted, not a box\n\n- [ ] write docs/b.md\n');
      for (const want of [
        '.planning/p/resume-W1-A.md',
        './.planning/p/resume-W1-A.md',
        path.join(t.dir, '.planning/p/resume-W1-A.md'),
      ]) {
        const src = checklistAt(t.dir, want, 'tester');
        assert.ok(src, want);
        assert.equal(src.label, '.planning/p/resume-W1-A.md');
        const next = await src.next();
        assert.equal(next.kind, 'work');
        assert.equal(next.kind === 'work' && next.item.title, 'write docs/b.md');
        assert.deepEqual(await src.progress(), { done: 0, total: 1 });
      }
      assert.equal(checklistAt(t.dir, 'missing.md', 'tester'), undefined);
      assert.equal(checklistAt(t.dir, '.planning/p', 'tester'), undefined);
      t.write('notes.txt', '- [ ] x\n');
      assert.equal(checklistAt(t.dir, 'notes.txt', 'tester'), undefined);
    } finally {
      t.dispose();
    }
  });
});
