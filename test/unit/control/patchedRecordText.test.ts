import * as assert from 'node:assert/strict';
import { patchedRecordText } from '../../../src/core/control/runRecords';
import { applyJsonChanges, newJsonText, type JsonChange } from '../../../src/core/store/jsonEdit';

/**
 * run.json updates (control/runRecords.ts `patchedRecordText`): a record in ralph's own form is patched as an object,
 * with what the format-keeping edit gives; any other form goes through that edit and keeps its formatting.
 */
describe('run.json: a patch of the top-level keys', () => {
  const record = {
    runId: 'r1',
    pid: 7,
    state: 'running',
    currentItem: { source: 'quantum', id: 'S1', title: 'one' },
    lanes: [] as unknown[],
    updatedAt: 'a',
  };
  const slow = (text: string, patch: Record<string, unknown>) =>
    applyJsonChanges(
      text,
      Object.entries(patch).map(
        ([k, value]) =>
          (value === undefined ? { op: 'delete', path: [k] } : { op: 'set', path: [k], value }) as JsonChange,
      ),
    );
  const cases: { name: string; text: string; patch: Record<string, unknown>; want: (text: string) => string }[] = [
    {
      name: "ralph's form: a scalar changed in place",
      text: newJsonText(record),
      patch: { state: 'stopped', updatedAt: 'b' },
      want: (t) => slow(t, { state: 'stopped', updatedAt: 'b' }),
    },
    {
      name: "ralph's form: a key deleted",
      text: newJsonText(record),
      patch: { currentItem: undefined },
      want: (t) => slow(t, { currentItem: undefined }),
    },
    {
      name: "ralph's form: a new key goes last",
      text: newJsonText(record),
      patch: { endedAt: 'c' },
      want: () => newJsonText({ ...record, endedAt: 'c' }),
    },
    {
      name: "ralph's form: nested values in the same form",
      text: newJsonText(record),
      patch: { lanes: [{ lane: 1, item: 'S1', agentPgid: null }], currentItem: null },
      want: () => newJsonText({ ...record, currentItem: null, lanes: [{ lane: 1, item: 'S1', agentPgid: null }] }),
    },
    { name: 'an equal value: the same text', text: newJsonText(record), patch: { pid: 7 }, want: (t) => t },
    {
      name: 'four spaces (a person reformatted it): kept',
      text: JSON.stringify(record, null, 4) + '\n',
      patch: { state: 'stopped' },
      want: (t) => slow(t, { state: 'stopped' }),
    },
    {
      name: 'one line: kept',
      text: JSON.stringify(record),
      patch: { state: 'stopped', endedAt: 'c' },
      want: (t) => slow(t, { state: 'stopped', endedAt: 'c' }),
    },
    {
      name: 'no final newline: the format-keeping edit',
      text: JSON.stringify(record, null, 2),
      patch: { state: 'stopped' },
      want: (t) => slow(t, { state: 'stopped' }),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = patchedRecordText(c.text, c.patch);
      assert.equal(got, c.want(c.text));
      const expected = { ...(JSON.parse(c.text) as Record<string, unknown>) };
      for (const [k, v] of Object.entries(c.patch))
        if (v === undefined) delete expected[k];
        else expected[k] = v;
      assert.deepEqual(JSON.parse(got), expected);
    });
  }

  it('four spaces stay four spaces', () => {
    assert.match(
      patchedRecordText(JSON.stringify(record, null, 4) + '\n', { state: 'stopped' }),
      /\n {4}"state": "stopped"/,
    );
  });
});
