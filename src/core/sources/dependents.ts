/**
 * Every task that depends on `id`, directly or through other tasks, whatever their statuses: flowctl 4.4.0's
 * `find_dependents` (a breadth-first walk of the reverse `depends_on` graph; each edge followed once), which
 * `task reset --cascade` filters afterwards. `nodes` is the scope to walk (flowctl: the tasks of the same spec).
 * Returns the ids in plain code-unit order (flowctl's `sorted(found)`: `fn-1.10` before `fn-1.2`), `id` excluded.
 * Pure; linear in nodes + edges; cycles end the walk.
 */
export function transitiveDependents(nodes: readonly { id: string; deps: readonly string[] }[], id: string): string[] {
  const reverse = new Map<string, string[]>();
  for (const n of nodes) {
    for (const d of n.deps) {
      const l = reverse.get(d);
      if (l) l.push(n.id);
      else reverse.set(d, [n.id]);
    }
  }
  const seen = new Set([id]);
  const found: string[] = [];
  const queue = [...(reverse.get(id) ?? [])];
  for (let i = 0; i < queue.length; i++) {
    const dep = queue[i]!;
    if (seen.has(dep)) continue;
    seen.add(dep);
    found.push(dep);
    for (const next of reverse.get(dep) ?? []) queue.push(next);
  }
  return found.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
