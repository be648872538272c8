import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { writeTextAtomic } from '../store/atomicWrite';
import { userStateDir } from '../store/userStateDir';
import { isClaimBaseline, type ClaimBaseline } from '../model/claimBaseline';

/**
 * The engine's mirror of a run's claim baseline outside the workspace (issue 11 K2/K3): the agent can edit
 * `.ralph/runs/<id>/run.json` (its `claimBaseline`), not the user's state folder, so crash recovery and `ralph status`
 * trust the mirror when one exists. `$XDG_STATE_HOME/ralph/baselines/<sha256(real folder)[:32]>/<runId>.json`
 * (the user's state folder, `userStateDir`, as trust). Not a sandbox: an agent running as
 * the user can still write there, it has to know to.
 */
export function baselineMirrorPath(folder: string, runId: string, env: NodeJS.ProcessEnv = process.env): string {
  let real = path.resolve(folder);
  try {
    real = realpathSync(folder);
  } catch {
    // the folder as given
  }
  return path.join(userStateDir(env), 'baselines', createHash('sha256').update(real).digest('hex').slice(0, 32), `${path.basename(runId)}.json`);
}

/** Writes (atomically) or, for null, removes the mirror of run `runId`'s baseline. */
export async function writeBaselineMirror(folder: string, runId: string, b: ClaimBaseline | null, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const file = baselineMirrorPath(folder, runId, env);
  if (!b) await rm(file, { force: true });
  else {
    await mkdir(path.dirname(file), { recursive: true });
    await writeTextAtomic(file, JSON.stringify(b) + '\n');
  }
}

/**
 * The mirrored baseline of run `runId`, or `null` when there is no mirror (a run of an older ralph, or one that
 * ended cleanly). A mirror that does not parse reads as none.
 */
export function readBaselineMirror(folder: string, runId: string, env: NodeJS.ProcessEnv = process.env): ClaimBaseline | null {
  try {
    const v = JSON.parse(readFileSync(baselineMirrorPath(folder, runId, env), 'utf8')) as unknown;
    return isClaimBaseline(v) ? v : null;
  } catch {
    return null;
  }
}

/** The baseline to trust for a run: its mirror when there is one, else run.json's `claimBaseline`. */
export function trustedBaseline(folder: string, runId: string, recorded: unknown, env: NodeJS.ProcessEnv = process.env): unknown {
  return readBaselineMirror(folder, runId, env) ?? recorded;
}
