import * as path from 'node:path';
import { ralphRunDir } from '../control/sentinels';
import type { WorkItemRef } from './events';

/**
 * Questions for a human: an iteration ends with a question when its own text holds
 * `<question>…</question>`, or, by the plain-question rule, when it used no tool that writes (write, edit, shell),
 * made no commit, and the last paragraph of its final text ends with "?". The item then waits for an answer; the
 * next prompt for it holds the question and the answer verbatim.
 */

/** A question the agent asked: its text verbatim and how it was recognised. */
export interface AgentQuestion {
  text: string;
  how: 'tag' | 'plain';
}

const TAG = /<question>\s*([\s\S]*?)\s*<\/question>/gi;

/**
 * The question of an iteration, or null. `texts` are the agent's own main-thread texts in order (never tool
 * results); `wrote` is true when it used a tool that writes or committed. The last tag wins. Pure.
 */
export function findQuestion(texts: readonly string[], wrote: boolean): AgentQuestion | null {
  let tagged: string | null = null;
  for (const t of texts) for (const m of t.matchAll(TAG)) if (m[1]!.trim()) tagged = m[1]!.trim();
  if (tagged !== null) return { text: tagged, how: 'tag' };
  if (wrote) return null;
  const final = [...texts].reverse().find((t) => t.trim()) ?? '';
  const paragraphs = final.trim().split(/\n\s*\n/);
  const last = paragraphs.at(-1)?.trim() ?? '';
  return last.endsWith('?') ? { text: last, how: 'plain' } : null;
}

/** The prompt section that hands a question and its answer to the next iteration of the item, verbatim. Pure. */
export function questionAnswerSection(question: string, answer: string): string {
  return [
    "## Your question and the human's answer",
    '',
    'You asked:',
    '',
    question,
    '',
    'The answer:',
    '',
    answer,
    '',
    'Go on with the task using this answer.',
    '',
  ].join('\n');
}

/** Where the answer to question `id` of a run is written (`ralph answer`, or by hand): `.ralph/runs/<run>/answers/<id>.md`. */
export function answerFilePath(folder: string, runId: string, questionId: string): string {
  return path.join(ralphRunDir(folder, runId), 'answers', `${questionId}.md`);
}

/** A question an item waits on: its id (`q<iteration>`), text, item and when it was asked (ms since the epoch). */
export interface WaitingQuestion {
  id: string;
  text: string;
  item: WorkItemRef | null;
  askedAtMs: number;
}

/**
 * What becomes of the questions set aside while other work goes on (`continueOnBlocked`, "Questions for a
 * human"), before an iteration: the first (in asking order) that waited `timeoutMs` or more without an answer
 * ends the run stalled (`timedOut`, 0 = wait for ever); otherwise the first that has an answer in `answers` (by
 * question id) is taken up again before new work (`answered`); `rest` still waits. Pure.
 */
export function settleSetAside(
  asked: readonly WaitingQuestion[],
  answers: Readonly<Record<string, string>>,
  now: number,
  timeoutMs: number,
): {
  timedOut: { question: WaitingQuestion; waitedMs: number } | null;
  answered: { question: WaitingQuestion; answer: string } | null;
  rest: WaitingQuestion[];
} {
  const open = asked.filter((q) => answers[q.id] === undefined);
  const late = timeoutMs > 0 ? open.find((q) => now - q.askedAtMs >= timeoutMs) : undefined;
  if (late)
    return {
      timedOut: { question: late, waitedMs: now - late.askedAtMs },
      answered: null,
      rest: asked.filter((q) => q !== late),
    };
  const got = asked.find((q) => answers[q.id] !== undefined);
  if (got)
    return {
      timedOut: null,
      answered: { question: got, answer: answers[got.id]! },
      rest: asked.filter((q) => q !== got),
    };
  return { timedOut: null, answered: null, rest: [...asked] };
}
