/**
 * A problem found in a file on disk, positioned for a person (and an editor): `file:line:column: message`, 1-based.
 * Every reader reports bad content this way (store/parseError.ts formats it and carries it in `FileProblemError`).
 */
export interface FileProblem {
  /** Absolute or workspace-relative path of the file at fault. */
  file: string;
  /** 1-based line, or 0 when the problem is about the whole file (e.g. it cannot be read). */
  line: number;
  /** 1-based column, or 0 when not positioned. */
  column: number;
  message: string;
}
