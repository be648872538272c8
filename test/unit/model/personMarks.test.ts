import * as assert from 'node:assert/strict';
import { parsePersonMarks } from '../../../src/core/model/claimBaseline';

describe('parsePersonMarks (.ralph/person-done.json, issue 11)', () => {
  const cases: [string, string | null | undefined, Record<string, string>][] = [
    ['absent', undefined, {}],
    ['null', null, {}],
    ['empty text', '', {}],
    ['not JSON', '{"quantum:US-1": ', {}],
    ['an array', '["quantum:US-1"]', {}],
    ['a JSON string', '"x"', {}],
    ['string entries kept, others dropped', '{"quantum:US-1": "2026-12-01T00:00:00.000Z", "flow-next:fn-1.1": 5, "x": null}', { 'quantum:US-1': '2026-12-01T00:00:00.000Z' }],
  ];
  for (const [name, text, want] of cases) it(name, () => assert.deepEqual(parsePersonMarks(text), want));
});
