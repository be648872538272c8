/**
 * `scripts/ralph/runs/<id>/progress.txt`, written by flow-next's ralph.sh (seed-systems.md §2.8), in both
 * dialects: v0.8 (`## <ISO> - iter <n>` headers and one `status=… epic=… task=… reason=…` line) and fn-114+/HEAD
 * (one `key=value` per line). Also reads the `iteration: N` / `epic: X` / `task: Y` form of flowctl's CI fixture.
 *
 * Fixes: §2.11-1 (v0.8's flowctl regexes never matched a real progress.txt, so iteration/epic/task were always
 * null) and §2.11-3 (HEAD's kv parser read the verbatim `last_output:` tail, where a quoted `promise=COMPLETE`
 * could mark a live run finished): lines between `last_output:` and the block's closing `---` are never parsed.
 */
export interface ProgressInfo {
  runId?: string;
  startedAt?: string;
  iteration: number | null;
  epic: string | null;
  task: string | null;
  /** Present when the completion marker (`completion_reason=` + `promise=COMPLETE`) closes the file. */
  completionReason?: string;
  /** Last `status=` of an iteration block (plan | work | none). */
  lastStatus?: string;
}

const KEY = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;
const V08_LINE = /^status=\S*\s+(?:epic|spec)=/;

/** Parses progress.txt text. Pure; never throws. */
export function parseProgressTxt(text: string): ProgressInfo {
  const kv = new Map<string, string>();
  const info: ProgressInfo = { iteration: null, epic: null, task: null };
  let inTail = false;
  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.trimEnd();
    if (inTail) {
      if (line === '---') inTail = false;
      continue;
    }
    if (line === 'last_output:') {
      inTail = true;
      continue;
    }
    let m: RegExpExecArray | null;
    if ((m = /^Run:\s*(\S+)/.exec(line))) {
      info.runId ??= m[1];
      continue;
    }
    if ((m = /^Started:\s*(\S+)/.exec(line))) {
      info.startedAt ??= m[1];
      continue;
    }
    if ((m = /^## \S+ - iter (\d+)\s*$/.exec(line))) {
      kv.set('iteration', m[1]!);
      continue;
    }
    if ((m = /^(iteration|epic|spec|task):\s*(\S+)\s*$/.exec(line))) {
      kv.set(m[1]!, m[2]!);
      continue;
    }
    if (V08_LINE.test(line)) {
      for (const tok of line.split(/\s+/)) {
        const t = KEY.exec(tok);
        if (t) kv.set(t[1]!, t[2]!);
      }
      continue;
    }
    if ((m = KEY.exec(line))) kv.set(m[1]!, m[2]!);
  }
  const nonEmpty = (k: string) => (kv.get(k)?.trim() ? kv.get(k)!.trim() : undefined);
  const iter = nonEmpty('iteration');
  info.iteration = iter !== undefined && /^\d+$/.test(iter) ? Number(iter) : null;
  info.epic = nonEmpty('spec') ?? nonEmpty('epic') ?? null;
  info.task = nonEmpty('task') ?? null;
  info.lastStatus = nonEmpty('status');
  const reason = kv.get('completion_reason');
  if (reason !== undefined && kv.get('promise')?.trim() === 'COMPLETE') info.completionReason = reason.trim();
  return info;
}

/**
 * The pid and host of a v0.8 run id `<YYYYMMDDTHHMMSSZ>-<host>-<actor>-<pid>-<4 hex>` (§2.8). HEAD's short ids
 * (`<YYYYMMDD-HHMMSS>-<4 hex>`) carry no pid: `undefined`.
 */
export function pidFromRunId(runId: string): { pid: number; hostAndActor: string } | undefined {
  const m = /^\d{8}T\d{6}Z-(.+)-(\d+)-[0-9a-f]{4}$/.exec(runId);
  return m ? { pid: Number(m[2]), hostAndActor: m[1]! } : undefined;
}
