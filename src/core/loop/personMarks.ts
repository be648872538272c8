import { readFileSync } from 'node:fs';
import { ITERATION_MARKER } from '../agents/spawn';
import { CONTAINMENT_INIT_NAME } from '../process/containment';
import { listRunRecords } from '../control/runRecords';
import { isPidAlive } from '../process/processGroup';
import { parsePersonMarks } from '../model/claimBaseline';
import { ralphFile } from '../model/ralphPaths';
import { readTextIfExists } from '../store/atomicWrite';
import { commitPlan } from '../store/writePlan';
import type { WorkItemRef } from './events';

/**
 * `.ralph/person-done.json`: items a person marked done with `ralph task done` from outside any iteration (run by a
 * person from outside, it is theirs). Shape `{"<source>:<id>": "<ISO time>"}`. The engine does not put
 * back an item marked here after its claim baseline was taken; `ralph task done` run from inside an iteration
 * records nothing here, so the engine verifies it like a ticked box.
 *
 * The file is in the workspace the agent can write, so the engine reads it before and after every agent process and
 * takes a mark that appeared or changed meanwhile as a claim (`ClaimBaseline.agentMarks`, model/claimBaseline.ts
 * `personMarksFor`): a person who marks an item done while an agent runs gets it verified by the gate like a claim
 * (`ralph task done` says so); between iterations, or with the run paused, the mark is theirs.
 */
const MAX_ENTRIES = 500;

const keyOf = (item: Pick<WorkItemRef, 'source' | 'id'>) => `${item.source}:${item.id}`;

/** The person marks, `{key: ISO time}`; a file that does not parse reads as none (it only ever keeps claims back). */
export async function readPersonMarks(folder: string): Promise<Record<string, string>> {
  return parsePersonMarks(await readTextIfExists(ralphFile(folder, 'personDone')));
}

/** Records that a person marked `item` done now (the newest {@link MAX_ENTRIES} marks are kept). */
export async function recordPersonDone(
  folder: string,
  item: Pick<WorkItemRef, 'source' | 'id'>,
  nowMs: number = Date.now(),
): Promise<void> {
  const file = ralphFile(folder, 'personDone');
  await commitPlan(file, async () => {
    const before = await readTextIfExists(file);
    const marks = await readPersonMarks(folder);
    delete marks[keyOf(item)];
    marks[keyOf(item)] = new Date(nowMs).toISOString();
    const kept = Object.fromEntries(Object.entries(marks).slice(-MAX_ENTRIES));
    return { writes: [{ file, before, after: JSON.stringify(kept, null, 2) + '\n' }], result: undefined };
  });
}

/** Items of `items` a person marked done at or after `sinceIso` (their own, not claims to verify). */
export function markedByPerson(
  marks: Record<string, string>,
  items: readonly WorkItemRef[],
  sinceIso: string,
): WorkItemRef[] {
  const since = Date.parse(sinceIso);
  return items.filter((i) => {
    const at = marks[keyOf(i)];
    return at !== undefined && Date.parse(at) >= since;
  });
}

/**
 * A run of `folder` with a child running now, or null: its agent (run.json `agentPgid` set), or a gate or `notify`
 * (its `claimBaseline.marksAtAgentStart` set: the engine reads the marks around every child), with
 * the engine alive on this host. A person mark made now cannot be told from that child's (see the file's doc):
 * `ralph task done` records it, and the run takes it as a claim its gate verifies.
 */
export function runWithChildRunning(folder: string): { runId: string; child: 'agent' | 'gate or notify' } | null {
  try {
    for (const { record } of listRunRecords(folder).records) {
      if (!isPidAlive(record.pid)) continue;
      if (typeof record.agentPgid === 'number' && record.agentPgid > 1) return { runId: record.runId, child: 'agent' };
      const b = (record as { claimBaseline?: unknown }).claimBaseline;
      if (b && typeof b === 'object' && (b as { marksAtAgentStart?: unknown }).marksAtAgentStart)
        return { runId: record.runId, child: 'gate or notify' };
    }
  } catch {
    return null;
  }
  return null;
}

/**
 * Removes the marks `keys` from `.ralph/person-done.json` (the run's end: marks written while a child of the run
 * ran were claims, and their items went back or were verified; left in the file they would read as a person's).
 * A file that does not parse is left as it is.
 */
export async function removePersonMarks(folder: string, keys: readonly string[]): Promise<void> {
  if (!keys.length) return;
  const file = ralphFile(folder, 'personDone');
  await commitPlan(file, async () => {
    const before = await readTextIfExists(file);
    const marks = parsePersonMarks(before);
    if (before === null || !keys.some((k) => k in marks)) return { writes: [], result: undefined };
    for (const k of keys) delete marks[k];
    return { writes: [{ file, before, after: JSON.stringify(marks, null, 2) + '\n' }], result: undefined };
  });
}

/** Whether PID 1 of this process's PID namespace is the init of a contained iteration (Linux; false elsewhere). */
export function insideContainedIteration(): boolean {
  try {
    return readFileSync('/proc/1/cmdline', 'latin1').split('\0')[3] === CONTAINMENT_INIT_NAME;
  } catch {
    return false;
  }
}

/**
 * Is this process running inside an agent's iteration? Its environment carries {@link ITERATION_MARKER}, or (an
 * agent that dropped the variable) one of its ancestors is the process group leader of a run's current agent
 * (`agentPgid` in a run.json of `folder`; Linux `/proc`, elsewhere only the variable is looked at).
 */
export function insideIteration(folder: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[ITERATION_MARKER]) return true;
  // In an iteration's PID namespace (process/containment.ts) the ancestors' pids are the namespace's own, so the walk
  // below cannot meet the host's agentPgid; PID 1 there is our init, which tells.
  if (insideContainedIteration()) return true;
  const agents = new Set<number>();
  try {
    for (const { record } of listRunRecords(folder).records)
      if (typeof record.agentPgid === 'number' && record.agentPgid > 1) agents.add(record.agentPgid);
  } catch {
    return false;
  }
  if (!agents.size) return false;
  let pid = process.pid;
  for (let i = 0; i < 64 && pid > 1; i++) {
    if (agents.has(pid)) return true;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!Number.isInteger(ppid)) return false;
      pid = ppid;
    } catch {
      return false;
    }
  }
  return false;
}
