import * as assert from 'node:assert/strict';
import { applyJsonChanges } from '../../../src/core/store/jsonEdit';
import { startItem } from '../../../src/core/sources/operations';
import { makeTempFolder } from '../../support/tempFolder';

/** Issue 12: an edit keeps a one-line object's own layout inside an indented file. */
describe('store: one-line objects keep their layout (issue 12)', () => {
  const doc =
    '{\n  "project": "p",\n  "branchName": "b",\n  "stories": [\n    {"id": "US-1", "title": "one", "passes": false, "status": "pending", "dependsOn": []},\n    {"id": "US-2", "title": "two", "passes": false, "status": "pending", "dependsOn": []}\n  ]\n}\n';

  it('set, new key and delete inside a one-line story stay on its line', () => {
    const out = applyJsonChanges(doc, [
      { op: 'set', path: ['stories', 0, 'status'], value: 'in_progress' },
      { op: 'set', path: ['stories', 0, 'startedAt'], value: '2026-12-01T10:00:00Z' },
      { op: 'set', path: ['stories', 0, 'retries'], value: { attempts: 1, log: ['x'] } },
      { op: 'delete', path: ['stories', 1, 'dependsOn'] },
    ]);
    assert.equal(out.split('\n').length, doc.split('\n').length, out);
    assert.match(
      out,
      /\n {4}\{"id": "US-1", "title": "one", "passes": false, "status": "in_progress", "dependsOn": \[\], "startedAt": "2026-12-01T10:00:00Z", "retries": \{"attempts": 1, "log": \["x"\]\}\},\n/,
    );
    assert.match(out, /\n {4}\{"id": "US-2", "title": "two", "passes": false, "status": "pending"\}\n/);
  });

  it('an indented object still gets indented new keys', () => {
    const indented = '{\n  "a": {\n    "b": 1\n  }\n}\n';
    assert.equal(
      applyJsonChanges(indented, [{ op: 'set', path: ['a', 'c'], value: 2 }]),
      '{\n  "a": {\n    "b": 1,\n    "c": 2\n  }\n}\n',
    );
  });

  it('task start on a quantum.json written one story per line changes only that line (and updatedAt)', async () => {
    const t = makeTempFolder('ralph-oneline-');
    try {
      t.write('quantum.json', doc);
      await startItem('US-1', { folder: t.dir, actor: 'tester' });
      const after = t.read('quantum.json').split('\n');
      const before = doc.split('\n');
      const changed = after.filter((l, i) => l !== before[i]);
      assert.ok(after.length - before.length <= 1, t.read('quantum.json'));
      assert.ok(
        changed.some((l) => /^ {4}\{"id": "US-1", .*"status": "in_progress".*\},$/.test(l)),
        t.read('quantum.json'),
      );
    } finally {
      t.dispose();
    }
  });
});
