import { OperationError } from '../core/model/operationError';
import { FileProblemError } from '../core/store/parseError';
import { FolderNotFoundError } from './folder';
import { escapeControls, terminalSafeJson } from '../core/control/terminalText';
import { writeOut, writeErr } from './terminalOut';

/**
 * Output helpers shared by the task, control and stale commands: flowctl's conventions (seed-systems.md §2.5):
 * `--json` prints `{"success": true, …}` on stdout; a refusal prints `{"success": false, "error": "<msg>"}` on
 * stdout (text mode: `Error: <msg>` on stderr) and exits 1. JSON documents are indented by two spaces, as flowctl's
 * `json.dumps(indent=2)` (event streams, `run --json`, stay one compact object per line).
 */
export function printResult(json: boolean, value: Record<string, unknown>, text: string): void {
  // Control characters from task content are printed escaped, in both forms.
  writeOut(json ? jsonDocument(value) : escapeControls(text.endsWith('\n') || !text ? text : text + '\n'));
  process.exitCode = 0;
}

/** Runs a command body, turning refusals and file problems into flowctl's error output and exit code 1. */
export async function runReporting(json: boolean, body: () => Promise<void> | void): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (!(err instanceof OperationError) && !(err instanceof FileProblemError)) throw err;
    printRefusal(json, `Error: ${err.message}`, err.message);
  }
}

/** A refusal (exit 1): `{"success":false,"error":<message>}` on stdout with `--json`, else `text` on stderr. */
export function printRefusal(json: boolean, text: string, message: string): void {
  if (json) writeOut(jsonDocument({ success: false, error: message }));
  else writeErr(`${escapeControls(text)}\n`);
  process.exitCode = 1;
}

/** A JSON document as every command prints it: two-space indent (flowctl's `json.dumps(indent=2)`) and a newline. */
export function jsonDocument(value: unknown): string {
  // C1 control characters escaped too: JSON.stringify leaves them raw, and a terminal obeys them.
  return terminalSafeJson(value, 2) + '\n';
}

export { endQuietlyOnBrokenPipe } from './brokenPipe';

/** How a command's failure ends the process (every entry): a missing `-C` folder, a file problem, anything else; exit 1. */
export function reportFailure(err: unknown): void {
  if (err instanceof FolderNotFoundError) {
    printRefusal(err.json, `ralph: ${err.message}`, err.message);
    return;
  }
  if (err instanceof FileProblemError) {
    writeErr(`ralph: ${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  writeErr(`ralph: ${(err as Error).message ?? String(err)}\n`);
  process.exitCode = 1;
}
