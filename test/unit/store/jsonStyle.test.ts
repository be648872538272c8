import * as assert from 'node:assert/strict';
import { applyJsonChanges, detectJsonStyle, type JsonChange } from '../../../src/core/store/jsonEdit';

const indentedStories =
  JSON.stringify(
    {
      stories: [
        { id: 'US-001', status: 'pending', retries: { attempts: 0, maxAttempts: 3 }, notes: '' },
        {
          id: 'US-002',
          status: 'failed',
          retries: { attempts: 1, maxAttempts: 3, failureLog: [{ phase: 'x' }] },
          notes: '',
        },
      ],
    },
    null,
    2,
  ) + '\n';

describe("store: JSON edits keep the file's layout", () => {
  const cases: { name: string; text: string; changes: JsonChange[]; expected: string }[] = [
    {
      name: 'a minified file stays on one line when a value is set, a key is added and an array grows',
      text: '{"z":1,"b":{"log":[]}}',
      changes: [
        { op: 'set', path: ['z'], value: 2 },
        { op: 'set', path: ['b', 'at'], value: { x: [1, 2] } },
        { op: 'append', path: ['b', 'log'], value: { phase: 'p', error: 'x, y: z' } },
      ],
      expected: '{"z":2,"b":{"log":[{"phase":"p","error":"x, y: z"}],"at":{"x":[1,2]}}}',
    },
    {
      name: 'a one-line file with spaces after colons and commas gets new text spaced the same way',
      text: '{"a": 1, "b": {"c": 2}}\n',
      changes: [{ op: 'set', path: ['b', 'd'], value: { x: [1, 2] } }],
      expected: '{"a": 1, "b": {"c": 2, "d": {"x": [1, 2]}}}\n',
    },
    {
      name: 'a key an object lacks goes where its siblings in the same array keep it, formatted like them',
      text: indentedStories,
      changes: [{ op: 'set', path: ['stories', 0, 'retries', 'failureLog'], value: [{ phase: 'y' }] }],
      expected: indentedStories.replace(
        '"maxAttempts": 3\n      },\n      "notes": ""\n    },\n    {\n      "id": "US-002"',
        '"maxAttempts": 3,\n        "failureLog": [\n          {\n            "phase": "y"\n          }\n        ]\n      },\n      "notes": ""\n    },\n    {\n      "id": "US-002"',
      ),
    },
    {
      name: 'a new key goes to the end of an object whose two keys only happen to be sorted in an unsorted document',
      text: '{\n  "z": 1,\n  "o": {\n    "a": 1,\n    "b": 2\n  }\n}\n',
      changes: [{ op: 'set', path: ['o', 'ab'], value: 3 }],
      expected: '{\n  "z": 1,\n  "o": {\n    "a": 1,\n    "b": 2,\n    "ab": 3\n  }\n}\n',
    },
  ];
  for (const c of cases) it(c.name, () => assert.equal(applyJsonChanges(c.text, c.changes), c.expected));

  const styles: { name: string; text: string; oneLine: { colon: string; comma: string } | undefined }[] = [
    {
      name: 'a minified document is one line without spacing',
      text: '{"a":1,"b":2}',
      oneLine: { colon: '', comma: '' },
    },
    {
      name: 'a one-line document with a final newline is still one line',
      text: '{"a": 1, "b": 2}\n',
      oneLine: { colon: ' ', comma: ' ' },
    },
    { name: 'an indented document is not one line', text: '{\n  "a": 1\n}\n', oneLine: undefined },
  ];
  for (const c of styles) it(c.name, () => assert.deepEqual(detectJsonStyle(c.text).oneLine, c.oneLine));
});
