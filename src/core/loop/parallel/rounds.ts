import type { QuantumStory } from '../../model/quantum';
import { quantumNext } from '../../sources/quantum/quantumOps';

/**
 * Which stories a parallel run starts now ("Each round"; seed-systems.md §4.6): the eligible stories of
 * §4.3 (`quantumNext`: pending or failed with attempts left, dependencies passed, by priority), minus the stories
 * running now, minus every story that shares a `filePaths` entry with a higher-priority story of the same round or
 * with a running story (two lanes editing one file would conflict at merge time), at most `free` of them. Pure.
 *
 * `running`: ids of the stories in lanes now. `free`: lanes free (max lanes − running). Returns ids in start order.
 */
export function pickRound(stories: readonly QuantumStory[], running: readonly string[], free: number): string[] {
  if (free <= 0) return [];
  const next = quantumNext(stories);
  if (next.status !== 'work') return [];
  const byId = new Map(stories.map((s) => [s.id, s]));
  const busy = new Set(running);
  const taken = new Set<string>();
  for (const id of running) for (const f of filesOf(byId.get(id))) taken.add(f);
  const out: string[] = [];
  for (const id of next.stories) {
    if (out.length >= free) break;
    if (busy.has(id)) continue;
    const files = filesOf(byId.get(id));
    if (files.some((f) => taken.has(f))) continue;
    for (const f of files) taken.add(f);
    out.push(id);
  }
  return out;
}

/** The files a story declares (story `filePaths` and its tasks' `filePaths`), normalised (`./a` = `a`). */
export function filesOf(story: QuantumStory | undefined): string[] {
  if (!story) return [];
  const own = (story as { filePaths?: unknown }).filePaths;
  const all = [...(Array.isArray(own) ? own : []), ...(story.tasks ?? []).flatMap((t) => t.filePaths ?? [])];
  return [
    ...new Set(
      all.filter((f): f is string => typeof f === 'string').map((f) => f.replace(/^\.\//, '').replace(/\/+$/, '')),
    ),
  ];
}
