import { commitPlan, type CommitOptions } from '../../store/writePlan';
import { readTextSync } from '../../store/readJsonFile';
import { CHECKBOX_LINE } from './checklist';

/**
 * Sets the mark of checkbox lines (1-based) of a checklist file in place: `[ ]` or `[x]`; every other byte stays as
 * written (a box already in the wanted state keeps its mark, so `[X]` stays `[X]`). Atomic and locked
 * (core/store/writePlan.ts; `opts.putBack`: a put-back of unverified ticks, written by its rules). Throws when a
 * line is not a checkbox. Returns true when the file changed.
 */
export async function setCheckboxes(
  file: string,
  lines: readonly number[],
  checked: boolean,
  opts: CommitOptions = {},
): Promise<boolean> {
  const { written } = await commitPlan(
    file,
    async () => {
      const before = readTextSync(file);
      if (before === undefined) throw new Error(`${file}: not found`);
      const parts = before.split(/(\r\n|\r|\n)/);
      for (const line of lines) {
        const idx = (line - 1) * 2;
        const text = parts[idx];
        const m = text === undefined ? null : CHECKBOX_LINE.exec(text);
        if (!m || text === undefined) throw new Error(`${file}:${line}: not a checkbox line`);
        if ((m[1] !== ' ') === checked) continue;
        parts[idx] = text.replace(/\[( |x|X)\]/, checked ? '[x]' : '[ ]');
      }
      return { writes: [{ file, before, after: parts.join('') }], result: undefined };
    },
    opts,
  );
  return written.length > 0;
}
