import { flowEpicSchema, flowMetaSchema, flowTaskSchema } from '../../src/core/model/flowNext';
import { quantumFileSchema } from '../../src/core/model/quantum';

/** Lines removed and added between two texts, counted as multisets: what a diff would show, in order. */
export function diffLines(before: string, after: string): { removed: string[]; added: string[] } {
  const minus = (x: string[], y: string[]) => {
    const left = new Map<string, number>();
    for (const l of y) left.set(l, (left.get(l) ?? 0) + 1);
    return x.filter((l) => {
      const n = left.get(l) ?? 0;
      if (n > 0) { left.set(l, n - 1); return false; }
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
