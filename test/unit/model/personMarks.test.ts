import * as assert from 'node:assert/strict';
import { marksChanged, parsePersonMarks, personMarksFor } from '../../../src/core/model/claimBaseline';

describe('parsePersonMarks (.ralph/person-done.json, issue 11)', () => {
  const cases: [string, string | null | undefined, Record<string, string>][] = [
    ['absent', undefined, {}],
    ['null', null, {}],
    ['empty text', '', {}],
    ['not JSON', '{"quantum:US-1": ', {}],
    ['an array', '["quantum:US-1"]', {}],
    ['a JSON string', '"x"', {}],
    [
      'string entries kept, others dropped',
      '{"quantum:US-1": "2026-12-01T00:00:00.000Z", "flow-next:fn-1.1": 5, "x": null}',
      { 'quantum:US-1': '2026-12-01T00:00:00.000Z' },
    ],
  ];
  for (const [name, text, want] of cases) it(name, () => assert.deepEqual(parsePersonMarks(text), want));
});

describe('person marks the agent could have written (issue 11: marksChanged, personMarksFor)', () => {
  const A = '2026-12-01T00:00:00.000Z';
  const B = '2026-12-01T00:05:00.000Z';
  const changed: [string, Record<string, string>, Record<string, string>, string[]][] = [
    ['nothing changed', { 'quantum:US-1': A }, { 'quantum:US-1': A }, []],
    ['a mark added', {}, { 'quantum:US-2': B }, ['quantum:US-2']],
    ['a mark re-dated', { 'quantum:US-1': A }, { 'quantum:US-1': B }, ['quantum:US-1']],
    ['a mark removed', { 'quantum:US-1': A }, {}, ['quantum:US-1']],
    ["added and removed, after's order then before's", { 'x:1': A, 'x:2': A }, { 'x:3': B, 'x:1': A }, ['x:3', 'x:2']],
  ];
  for (const [name, before, after, want] of changed)
    it(`marksChanged: ${name}`, () => assert.deepEqual(marksChanged(before, after), want));

  const marks = { 'quantum:US-1': A, 'quantum:US-2': B, 'flow-next:fn-1.1': B };
  const kept: [string, Parameters<typeof personMarksFor>[1], string[]][] = [
    ['no baseline: every mark', null, ['quantum:US-1', 'quantum:US-2', 'flow-next:fn-1.1']],
    ['a baseline without agent facts: every mark', {}, ['quantum:US-1', 'quantum:US-2', 'flow-next:fn-1.1']],
    ["agentMarks are never a person's", { agentMarks: ['quantum:US-2'] }, ['quantum:US-1', 'flow-next:fn-1.1']],
    [
      "an agent running: marks changed since it started are not a person's",
      { marksAtAgentStart: { 'quantum:US-1': A, 'quantum:US-2': A } },
      ['quantum:US-1'],
    ],
    [
      'both rules',
      { agentMarks: ['quantum:US-1'], marksAtAgentStart: { 'quantum:US-1': A, 'quantum:US-2': B } },
      ['quantum:US-2'],
    ],
  ];
  for (const [name, b, want] of kept)
    it(`personMarksFor: ${name}`, () => assert.deepEqual(Object.keys(personMarksFor(marks, b)), want));
});
