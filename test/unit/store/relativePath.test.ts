import * as assert from 'node:assert';
import * as path from 'node:path';
import { relativeTo } from '../../../src/core/store/relativePath';

describe('relativeTo (path relative to a folder, / separators)', () => {
  const cases: Array<[folder: string, p: string]> = [
    ['/w/proj', '/w/proj/.flow/tasks/fn-1.1.json'],
    ['/w/proj', '/w/proj/quantum.json'],
    ['/w/proj/', '/w/proj/.flow/meta.json'],
    ['/w/proj', '/w/proj'],
    ['/w/proj', '/w/proj/'],
    ['/w/proj', '/w/project/x.json'],
    ['/w/proj', '/w/other/x.json'],
    ['/w/proj', '/w/proj/a/../b.json'],
    ['/w/proj', '/w/proj//a.json'],
    ['/w/proj', '/w/proj/./a.json'],
    ['/w/./proj', '/w/proj/a.json'],
    ['/w/proj/..', '/w/a.json'],
    ['/', '/a/b.json'],
    ['/w/proj', '/tmp/state/tasks/fn-1.1.state.json'],
  ];
  for (const [folder, p] of cases) {
    it(`${folder} + ${p} gives what path.relative gives`, () => {
      assert.strictEqual(relativeTo(folder)(p), path.relative(folder, p).split(path.sep).join('/'));
    });
  }
});
