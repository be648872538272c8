import * as assert from 'node:assert/strict';
import { applyJsonChanges, detectJsonStyle, newJsonText, type JsonChange } from '../../../src/core/store/jsonEdit';

const flowTask = '{\n  "assignee": "me",\n  "id": "fn-1.1",\n  "status": "done",\n  "title": "Caf\\u00e9"\n}\n';

describe('store: in-place JSON edits', () => {
  const cases: { name: string; text: string; changes: JsonChange[]; expected: string }[] = [
    {
      name: 'setting a value replaces only that value',
      text: flowTask,
      changes: [{ op: 'set', path: ['status'], value: 'todo' }],
      expected: flowTask.replace('"done"', '"todo"'),
    },
    {
      name: 'deleting a key removes its line and keeps the rest byte for byte',
      text: flowTask,
      changes: [{ op: 'delete', path: ['assignee'] }],
      expected: '{\n  "id": "fn-1.1",\n  "status": "done",\n  "title": "Caf\\u00e9"\n}\n',
    },
    {
      name: 'a new key goes to its sorted place when the keys are sorted',
      text: flowTask,
      changes: [{ op: 'set', path: ['priority'], value: 2 }],
      expected:
        '{\n  "assignee": "me",\n  "id": "fn-1.1",\n  "priority": 2,\n  "status": "done",\n  "title": "Caf\\u00e9"\n}\n',
    },
    {
      name: 'a new key goes to the end when the keys are not sorted',
      text: '{\n  "b": 1,\n  "a": 2\n}\n',
      changes: [{ op: 'set', path: ['c'], value: 3 }],
      expected: '{\n  "b": 1,\n  "a": 2,\n  "c": 3\n}\n',
    },
    {
      name: 'new non-ASCII text is escaped in a file that is pure ASCII',
      text: flowTask,
      changes: [{ op: 'set', path: ['status'], value: 'façade' }],
      expected: flowTask.replace('"done"', '"fa\\u00e7ade"'),
    },
    {
      name: 'new non-ASCII text stays raw in a file that already holds raw non-ASCII',
      text: '{\n  "a": "é",\n  "b": 1\n}\n',
      changes: [{ op: 'set', path: ['b'], value: 'ç' }],
      expected: '{\n  "a": "é",\n  "b": "ç"\n}\n',
    },
    {
      name: 'CRLF line endings are kept',
      text: '{\r\n  "a": 1,\r\n  "b": 2\r\n}\r\n',
      changes: [{ op: 'set', path: ['c'], value: 3 }],
      expected: '{\r\n  "a": 1,\r\n  "b": 2,\r\n  "c": 3\r\n}\r\n',
    },
    {
      name: 'appending to an array adds one element at the end',
      text: '{\n  "log": [\n    {\n      "phase": "x"\n    }\n  ]\n}\n',
      changes: [{ op: 'append', path: ['log'], value: { phase: 'y' } }],
      expected: '{\n  "log": [\n    {\n      "phase": "x"\n    },\n    {\n      "phase": "y"\n    }\n  ]\n}\n',
    },
    {
      name: 'a missing final newline stays missing',
      text: '{\n  "a": 1\n}',
      changes: [{ op: 'set', path: ['a'], value: 2 }],
      expected: '{\n  "a": 2\n}',
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(applyJsonChanges(c.text, c.changes), c.expected));
  }

  it('setting a value the file already holds returns the same text, even when it is written with escapes', () => {
    assert.equal(applyJsonChanges(flowTask, [{ op: 'set', path: ['title'], value: 'Café' }]), flowTask);
  });

  it('deleting an absent key changes nothing', () => {
    assert.equal(applyJsonChanges(flowTask, [{ op: 'delete', path: ['evidence'] }]), flowTask);
  });

  it('detects tab indentation', () => {
    assert.equal(detectJsonStyle('{\n\t"a": 1\n}').formatting.insertSpaces, false);
  });

  it('writes new files with sorted keys, two-space indent and a trailing newline', () => {
    assert.equal(
      newJsonText({ b: 1, a: 'é' }, { sortKeys: true, asciiOnly: true }),
      '{\n  "a": "\\u00e9",\n  "b": 1\n}\n',
    );
  });
});
