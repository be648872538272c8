import { z } from 'zod';

/**
 * One failed verification of an item (`.ralph/attempts.json`): carried into the next prompt, all of them, until a
 * debugging pass (loop/attempts.ts). Loose: keys a later engine adds are kept.
 */
export const attemptRecordSchema = z.looseObject({
  /** 1-based attempt number. */
  number: z.number().int().positive(),
  /** One line: the agent's last commit subject, else its final sentence. */
  approach: z.string(),
  /** Why verification failed: gate label and exit code, then the first failing lines. */
  reason: z.string(),
  /** ISO time of the failure. */
  at: z.string(),
  /** The run that made the attempt. */
  runId: z.string().optional(),
});
export type AttemptRecord = z.infer<typeof attemptRecordSchema>;

/**
 * `.ralph/attempts.json`: `{"<source>:<key>": AttemptRecord[]}`, oldest first; the key is the task / story id, or
 * the box text for a checklist (lines move as the file is edited). Read and written by loop/attemptStore.ts.
 */
export const attemptsFileSchema = z.record(z.string(), z.array(attemptRecordSchema));
export type AttemptsFile = z.infer<typeof attemptsFileSchema>;

/**
 * `.ralph/blocked.json`: checklist boxes the loop blocked (a checkbox file has no place for it), `{"<file>:<box
 * identity>": "<reason>"}`; `next` skips them. Read and written by the checklist work source (sources/work/checklistSource.ts).
 */
export const blockedFileSchema = z.record(z.string(), z.string());
export type BlockedFile = z.infer<typeof blockedFileSchema>;
