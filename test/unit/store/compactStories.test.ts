import * as assert from 'node:assert/strict';
import { applyJsonChanges, type JsonChange } from '../../../src/core/store/jsonEdit';
import { planQuantumRelease, planQuantumStart } from '../../../src/core/sources/quantum/quantumOps';
import type { QuantumDoc } from '../../../src/core/sources/quantum/readQuantum';
import { quantumFileSchema } from '../../../src/core/model/quantum';

/** The three layouts quantum.json is written in: a story per line, a story on two lines, indented (quantum-loop, flowctl). */
const layouts: { name: string; text: string }[] = [
  {
    name: 'one story per line',
    text: '{\n  "project": "p",\n  "stories": [\n    {"id": "US-1", "title": "one", "status": "pending", "dependsOn": []},\n    {"id": "US-2", "title": "two", "status": "pending", "dependsOn": ["US-1"]}\n  ]\n}\n',
  },
  {
    name: 'two lines per story',
    text: '{\n  "project": "p",\n  "stories": [\n    {"id": "US-1", "title": "one", "status": "pending",\n     "priority": 1, "dependsOn": []},\n    {"id": "US-2", "title": "two", "status": "pending",\n     "priority": 2, "dependsOn": ["US-1"]}\n  ]\n}\n',
  },
  {
    name: 'indented (quantum-loop / flowctl style)',
    text:
      JSON.stringify(
        {
          project: 'p',
          stories: [
            { id: 'US-1', title: 'one', status: 'pending', dependsOn: [] },
            { id: 'US-2', title: 'two', status: 'pending', dependsOn: ['US-1'] },
          ],
        },
        null,
        2,
      ) + '\n',
  },
];

/** The lines of story US-2 (the untouched one) in `text`. */
function story2Lines(text: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.includes('"US-2"') || l.includes('"id": "US-2"'));
  const from = lines[start]!.trim().startsWith('{') ? start : start - 1;
  let end = from;
  while (!/^\s*\}/.test(lines[end]!) && !/\}\s*,?$/.test(lines[end]!)) end++;
  return lines.slice(from, end + 1).join('\n');
}

function doc(text: string): QuantumDoc {
  return { file: '/w/quantum.json', text, data: quantumFileSchema.parse(JSON.parse(text)) } as QuantumDoc;
}

describe('store: compact quantum stories keep their layout (new-user try)', () => {
  for (const { name, text } of layouts) {
    describe(name, () => {
      const lines = text.split('\n').length;

      it('a changed status keeps the line count and the untouched story byte-identical', () => {
        const out = applyJsonChanges(text, [{ op: 'set', path: ['stories', 0, 'status'], value: 'in_progress' }]);
        assert.equal(out, text.replace('"pending"', '"in_progress"'));
        assert.equal(out.split('\n').length, lines);
      });

      it('a new key goes into the story without reflowing it (compact: same lines; indented: one more line)', () => {
        const change: JsonChange = { op: 'set', path: ['stories', 0, 'startedAt'], value: '2026-12-02T01:00:00.000Z' };
        const out = applyJsonChanges(text, [change]);
        assert.equal(out.split('\n').length, lines + (name.startsWith('indented') ? 1 : 0), out);
        assert.equal(story2Lines(out), story2Lines(text));
        assert.deepEqual(JSON.parse(out).stories[0].startedAt, change.value);
      });

      it('a set to the value the file holds changes nothing', () => {
        assert.equal(applyJsonChanges(text, [{ op: 'set', path: ['stories', 1, 'status'], value: 'pending' }]), text);
      });

      it('start then release (a run that did no work) leaves the file byte-identical, with no startedAt: null', () => {
        const started = planQuantumStart(doc(text), 'US-1', {}, Date.parse('2026-12-02T01:00:00Z')).text;
        assert.notEqual(started, text);
        assert.equal(story2Lines(started), story2Lines(text));
        const released = planQuantumRelease(doc(started), 'US-1', Date.parse('2026-12-02T01:05:00Z')).text;
        assert.equal(released, text);
      });
    });
  }

  it('a one-line story with a changed status stays one line', () => {
    const text = layouts[0]!.text;
    const out = applyJsonChanges(text, [{ op: 'set', path: ['stories', 1, 'status'], value: 'passed' }]);
    assert.match(out, /\n {4}\{"id": "US-2", "title": "two", "status": "passed", "dependsOn": \["US-1"\]\}\n/);
  });

  it('release keeps startedAt: null when the file carries the key on other stories (quantum-loop writes it)', () => {
    const text =
      '{\n  "project": "p",\n  "stories": [\n    {"id": "US-1", "status": "in_progress", "dependsOn": [], "startedAt": "2026-12-02T01:00:00Z"},\n    {"id": "US-2", "status": "passed", "dependsOn": [], "startedAt": null}\n  ]\n}\n';
    const out = planQuantumRelease(doc(text), 'US-1', Date.parse('2026-12-02T01:05:00Z')).text;
    assert.equal(
      out,
      text.replace(
        '"in_progress", "dependsOn": [], "startedAt": "2026-12-02T01:00:00Z"',
        '"pending", "dependsOn": [], "startedAt": null',
      ),
    );
  });
});
