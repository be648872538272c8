import * as assert from 'node:assert/strict';
import { findDuplicateKey, isNewJsonText, newJsonText, refuseDuplicateKeys } from '../../../src/core/store/jsonEdit';
import { FileProblemError } from '../../../src/core/store/parseError';

describe('store: duplicate keys', () => {
  const cases: { name: string; text: string; expected: { key: string; offset: number } | undefined }[] = [
    {
      name: 'a key repeated in the top object is found at its second occurrence',
      text: '{"id":"US-001","status":"passed","status":"pending"}',
      expected: { key: 'status', offset: 33 },
    },
    {
      name: 'a key repeated in a nested object inside an array is found',
      text: '{"stories":[{"id":"a"},{"id":"b","id":"c"}]}',
      expected: { key: 'id', offset: 33 },
    },
    {
      name: 'the same key in sibling objects is not a duplicate',
      text: '{"a":{"id":1},"b":{"id":2},"id":3}',
      expected: undefined,
    },
    {
      name: 'a key that reappears after its nested object closed is still a duplicate of its own object',
      text: '{"a":1,"b":{"a":2},"a":3}',
      expected: { key: 'a', offset: 19 },
    },
    {
      name: 'a file without duplicates has none',
      text: '{\n  "a": [1, {"b": 2}],\n  "c": null\n}\n',
      expected: undefined,
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(findDuplicateKey(c.text), c.expected));

  it('the refusal names the file, line and column of the second occurrence', () => {
    const text = '{\n  "status": "passed",\n  "status": "pending"\n}\n';
    assert.throws(
      () => refuseDuplicateKeys('quantum.json', text),
      (err: unknown) => {
        assert.ok(err instanceof FileProblemError);
        assert.deepEqual([err.problem.file, err.problem.line, err.problem.column], ['quantum.json', 3, 3]);
        assert.match(err.message, /^quantum\.json:3:3: duplicate key "status"/);
        return true;
      },
    );
  });

  it("isNewJsonText: only ralph's own form, never a text with a repeated key (the refusal's shortcut)", () => {
    const rows: Array<[string, boolean]> = [
      [newJsonText({ a: 1, b: { c: [1, 'x'] } }), true],
      [newJsonText({}), true],
      ['{\n  "status": "passed",\n  "status": "pending"\n}\n', false], // the repeated key would be written once
      ['{\n  "a": {\n    "id": 1,\n    "id": 2\n  }\n}\n', false],
      ['{"a":1}', false], // another form: scanned
      ['{\n  "a": 1\n}', false], // no trailing newline
      ['{\n  "a": 1,\n}\n', false], // not JSON
      ['', false],
    ];
    for (const [text, want] of rows) {
      assert.equal(isNewJsonText(text), want, JSON.stringify(text));
      if (findDuplicateKey(text)) assert.throws(() => refuseDuplicateKeys('run.json', text), FileProblemError);
    }
  });
});
