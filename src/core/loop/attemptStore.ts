import { readTextIfExists } from '../store/atomicWrite';
import { parseJsonWithSchema } from '../store/readJsonFile';
import { attemptsFileSchema, type AttemptsFile } from '../model/ralphState';
import { commitPlan } from '../store/writePlan';
import type { AttemptRecord } from './attempts';
import type { WorkItemRef } from './events';
import { ralphFile } from '../model/ralphPaths';

/**
 * `.ralph/attempts.json`: every failed verification per item, kept across runs and sessions (agmo kept them only in
 * the conversation, seed-systems.md §5.6-3). Shape: `{"<source>:<key>": AttemptRecord[]}` where the key is the
 * task / story id, or the box text for a checklist (lines move as the file is edited). Written atomically and
 * locked; a file that does not parse is reported (file:line:column) and never overwritten.
 */
export function attemptsPath(folder: string): string {
  return ralphFile(folder, 'attempts');
}

export function attemptKey(item: WorkItemRef): string {
  return `${item.source}:${item.source === 'checklist' ? item.title : item.id}`;
}

function parse(file: string, text: string | undefined): AttemptsFile {
  return text === undefined ? {} : parseJsonWithSchema(file, text, attemptsFileSchema);
}

/** Failed attempts recorded for an item, oldest first. */
export async function readAttempts(folder: string, item: WorkItemRef): Promise<AttemptRecord[]> {
  const file = attemptsPath(folder);
  return parse(file, await readTextIfExists(file))[attemptKey(item)] ?? [];
}

/** Appends a failed attempt. */
export async function appendAttempt(folder: string, item: WorkItemRef, record: AttemptRecord): Promise<void> {
  await editAttempts(folder, (all) => ({ ...all, [attemptKey(item)]: [...(all[attemptKey(item)] ?? []), record] }));
}

/** Forgets an item's attempts (after it was verified done, or reset by a person). */
export async function clearAttempts(folder: string, item: WorkItemRef): Promise<void> {
  // Nothing to clear takes no lock (once an iteration): a record added after this read is one added after the edit.
  const file = attemptsPath(folder);
  if (!(attemptKey(item) in parse(file, await readTextIfExists(file)))) return;
  await editAttempts(folder, (all) => {
    const rest = { ...all };
    delete rest[attemptKey(item)];
    return rest;
  });
}

async function editAttempts(
  folder: string,
  edit: (all: Record<string, AttemptRecord[]>) => Record<string, AttemptRecord[]>,
): Promise<void> {
  const file = attemptsPath(folder);
  await commitPlan(file, async () => {
    const before = await readTextIfExists(file);
    const after = JSON.stringify(edit(parse(file, before)), null, 2) + '\n';
    return {
      writes: [{ file, before, after: before === undefined && after === '{}\n' ? '' : after }].filter(
        (w) => w.after !== '',
      ),
      result: undefined,
    };
  });
}
