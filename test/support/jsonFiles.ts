import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { flowEpicSchema, flowMetaSchema, flowTaskSchema } from '../../src/core/model/flowNext';
import { quantumFileSchema } from '../../src/core/model/quantum';
import { applyJsonChanges } from '../../src/core/store/jsonEdit';

/** Lines removed and added between two texts, counted as multisets: what a diff would show, in order. */
export function diffLines(before: string, after: string): { removed: string[]; added: string[] } {
  const minus = (x: string[], y: string[]) => {
    const left = new Map<string, number>();
    for (const l of y) left.set(l, (left.get(l) ?? 0) + 1);
    return x.filter((l) => {
      const n = left.get(l) ?? 0;
      if (n > 0) {
        left.set(l, n - 1);
        return false;
      }
      return true;
    });
  };
  const b = before.split('\n');
  const a = after.split('\n');
  return { removed: minus(b, a), added: minus(a, b) };
}

/**
 * The schema of a flow-next or quantum-loop file, by its name (`tasks/…json` or `tasks-…json`, `epics`/`specs`,
 * `meta.json`, `quantum.*`), or undefined for a file none applies to (config, markdown, state overlays).
 */
export function schemaFor(name: string) {
  if (/tasks[-/].*\.json$/.test(name) && !name.endsWith('.state.json')) return flowTaskSchema;
  if (/(epics|specs)[-/].*\.json$/.test(name)) return flowEpicSchema;
  if (/meta\.json$/.test(name)) return flowMetaSchema;
  if (/^quantum[.-]/.test(name)) return quantumFileSchema;
  return undefined;
}

/**
 * Declares, for each `{name, file, schemaName}`: the file validates against its schema ({@link schemaFor} of
 * `schemaName`) keeping every top-level key, and stays byte-identical when every top-level key is set to its own
 * value (the in-place editor changes nothing it need not). Used on the fixtures (unit) and the real files (corpus).
 */
export function describeSchemaAndByteIdentity(files: { name: string; file: string; schemaName: string }[]): void {
  for (const { name, file, schemaName } of files) {
    it(`${name} validates and keeps its unknown keys`, () => {
      const raw = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      const parsed = schemaFor(schemaName)!.parse(raw) as Record<string, unknown>;
      for (const k of Object.keys(raw)) assert.ok(k in parsed, `key ${k} kept`);
    });

    it(`${name} stays byte-identical when every top-level key is set to its own value`, () => {
      const text = fs.readFileSync(file, 'utf8');
      const raw = JSON.parse(text) as Record<string, unknown>;
      assert.equal(
        applyJsonChanges(
          text,
          Object.entries(raw).map(([k, value]) => ({ op: 'set' as const, path: [k], value })),
        ),
        text,
      );
    });
  }
}
