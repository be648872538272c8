import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { writeTextAtomic } from '../store/atomicWrite';
import { userStateDir } from '../store/userStateDir';
import { isClaimBaseline, leastDone, type ClaimBaseline } from '../model/claimBaseline';

/**
 * The engine's mirror of a run's claim baseline outside the workspace: the agent can edit
 * `.ralph/runs/<id>/run.json` (its `claimBaseline`), not the user's state folder, so crash recovery and `ralph status`
 * trust the mirror when one exists. `$XDG_STATE_HOME/ralph/baselines/<sha256(real folder)[:32]>/<runId>.json`
 * (the user's state folder, `userStateDir`, as trust). Not a sandbox: an agent running as
 * the user can still write there, it has to know to.
 */
export function baselineMirrorPath(folder: string, runId: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(baselineMirrorDir(folder, env), `${path.basename(runId)}.json`);
}

/** The folder holding the mirrors of `folder`'s runs: `$XDG_STATE_HOME/ralph/baselines/<sha256(real folder)[:32]>/`. */
export function baselineMirrorDir(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userStateDir(env), 'baselines', folderKey(folder));
}

/** `sha256(real path of folder)[:32]`, the folder's name in the state folder. */
function folderKey(folder: string): string {
  let real = path.resolve(folder);
  try {
    real = realpathSync(folder);
  } catch {
    // the folder as given
  }
  return createHash('sha256').update(real).digest('hex').slice(0, 32);
}

/**
 * The second copy of every mirror: `$XDG_STATE_HOME/ralph/claims/<hash>/<runId>.json`,
 * written with the mirror and read with it ({@link readBaselineMirror}): an agent that deletes or forges the mirror
 * (and run.json) must find and change this one too. A mitigation, not a wall: it is in the user's reach as well.
 */
export function baselineCopyPath(folder: string, runId: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userStateDir(env), 'claims', folderKey(folder), `${path.basename(runId)}.json`);
}

/** Suffix of a run's agent file next to its mirror (`<runId>.agent.json`); never a mirror itself. */
const AGENT_SUFFIX = '.agent.json';

/** One mirror found in the state folder: the run it names (file name) and its baseline, null when it does not parse. */
export interface MirrorEntry {
  runId: string;
  baseline: ClaimBaseline | null;
}

/**
 * Every mirror of `folder`'s runs (the mirror is the truth until its claims are
 * settled, whatever `.ralph/runs/` says or whether the run's folder still exists). Sorted by run id. None when the
 * state folder has none; a mirror that does not parse is listed with `baseline: null`.
 */
export function listBaselineMirrors(folder: string, env: NodeJS.ProcessEnv = process.env): MirrorEntry[] {
  const names = [
    ...new Set(
      [baselineMirrorDir(folder, env), path.dirname(baselineCopyPath(folder, 'x', env))].flatMap((d) => {
        try {
          return readdirSync(d);
        } catch {
          return [];
        }
      }),
    ),
  ];
  return names
    .filter((n) => n.endsWith('.json') && !n.endsWith(AGENT_SUFFIX) && !n.startsWith('.'))
    .sort()
    .map((n) => {
      const runId = n.slice(0, -'.json'.length);
      return { runId, baseline: readBaselineMirror(folder, runId, env) };
    });
}

/** The agent of a run as its engine recorded it outside the workspace: process group id and iteration token. */
export interface AgentMirror {
  runId: string;
  pgid: number;
  token: string;
}

/** Path of run `runId`'s agent file (`<mirror folder>/<runId>.agent.json`). */
export function agentMirrorPath(folder: string, runId: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(baselineMirrorDir(folder, env), `${path.basename(runId)}${AGENT_SUFFIX}`);
}

/**
 * Records (atomically) or, for null, removes the running agent of run `runId`: the next
 * start ends an orphan agent group from it even when the run's folder in the workspace was deleted.
 */
export async function writeAgentMirror(
  folder: string,
  runId: string,
  agent: { pgid: number; token: string } | null,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const file = agentMirrorPath(folder, runId, env);
  if (!agent) await rm(file, { force: true });
  else {
    await mkdir(path.dirname(file), { recursive: true });
    await writeTextAtomic(file, JSON.stringify({ pgid: agent.pgid, token: agent.token }) + '\n');
  }
}

/** Every agent file of `folder`'s runs that parses (`pgid` an integer > 1, `token` a non-empty string), by run id. */
export function listAgentMirrors(folder: string, env: NodeJS.ProcessEnv = process.env): AgentMirror[] {
  const dir = baselineMirrorDir(folder, env);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: AgentMirror[] = [];
  for (const n of names.filter((x) => x.endsWith(AGENT_SUFFIX)).sort()) {
    try {
      const v = JSON.parse(readFileSync(path.join(dir, n), 'utf8')) as { pgid?: unknown; token?: unknown };
      if (Number.isInteger(v.pgid) && (v.pgid as number) > 1 && typeof v.token === 'string' && v.token)
        out.push({ runId: n.slice(0, -AGENT_SUFFIX.length), pgid: v.pgid as number, token: v.token });
    } catch {
      // unreadable: nothing to end from it
    }
  }
  return out;
}

/** Writes (atomically) or, for null, removes the mirror of run `runId`'s baseline. */
export async function writeBaselineMirror(
  folder: string,
  runId: string,
  b: ClaimBaseline | null,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  // The copy first: a crash between the two writes leaves copies that differ, read as the one with fewer done.
  for (const file of [baselineCopyPath(folder, runId, env), baselineMirrorPath(folder, runId, env)]) {
    if (!b) await rm(file, { force: true });
    else {
      await mkdir(path.dirname(file), { recursive: true });
      await writeTextAtomic(file, JSON.stringify(b) + '\n');
    }
  }
}

/**
 * The mirrored baseline of run `runId`, or `null` when there is no mirror (a run of an older ralph, or one that
 * ended cleanly). Both copies are read (the mirror and {@link baselineCopyPath}): one gone or not parsing, the other
 * counts; two that differ count as the one with fewer items done (`leastDone`).
 */
export function readBaselineMirror(
  folder: string,
  runId: string,
  env: NodeJS.ProcessEnv = process.env,
): ClaimBaseline | null {
  const [a, b] = [baselineMirrorPath(folder, runId, env), baselineCopyPath(folder, runId, env)].map((file) => {
    try {
      const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      return isClaimBaseline(v) ? v : null;
    } catch {
      return null;
    }
  });
  return a && b ? leastDone(a, b) : (a ?? b ?? null);
}

/** The baseline to trust for a run: its mirror when there is one, else run.json's `claimBaseline`. */
export function trustedBaseline(
  folder: string,
  runId: string,
  recorded: unknown,
  env: NodeJS.ProcessEnv = process.env,
): unknown {
  return readBaselineMirror(folder, runId, env) ?? recorded;
}
