import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { parseJsonWithSchema } from '../../../src/core/store/readJsonFile';
import { FileProblemError } from '../../../src/core/store/parseError';

const schema = z.object({
  project: z.object({ priority: z.number() }).optional(),
  stories: z.array(z.object({ id: z.string(), priority: z.number().optional() })),
});

describe('store: schema errors point at the value at fault', () => {
  const cases: { name: string; text: string; expected: [number, number, RegExp] }[] = [
    {
      name: 'a bad value in the second story is positioned at its own key, not at the first key of that name',
      text: '{\n  "project": {"priority": 1},\n  "stories": [\n    {"id": "a", "priority": 2},\n    {"id": "b", "priority": "high"}\n  ]\n}\n',
      expected: [5, 17, /^stories\.1\.priority: /],
    },
    {
      name: 'a missing key is positioned at the object that lacks it',
      text: '{\n  "stories": [\n    {"id": "a"},\n    {"priority": 1}\n  ]\n}\n',
      expected: [4, 5, /^stories\.1\.id: /],
    },
    {
      name: 'a bad array element is positioned at its value',
      text: '{\n  "stories": [\n    {"id": "a"},\n    "b"\n  ]\n}\n',
      expected: [4, 5, /^stories\.1: /],
    },
    {
      name: 'a wrong root is positioned at the start of the document',
      text: '[]\n',
      expected: [1, 1, /^\(root\): /],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.throws(
        () => parseJsonWithSchema('f.json', c.text, schema),
        (err: unknown) => {
          assert.ok(err instanceof FileProblemError);
          assert.deepEqual([err.problem.line, err.problem.column], c.expected.slice(0, 2));
          assert.match(err.problem.message, c.expected[2]);
          return true;
        },
      );
    });
  }
});
