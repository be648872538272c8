import { OperationError } from '../core/model/operationError';
import { FileProblemError } from '../core/store/parseError';
import { escapeControls, terminalSafeJson } from '../core/control/terminalText';

/**
 * Output helpers shared by the task, control and stale commands: flowctl's conventions (seed-systems.md §2.5):
 * `--json` prints `{"success": true, …}` on stdout; a refusal prints `{"success": false, "error": "<msg>"}` on
 * stdout (text mode: `Error: <msg>` on stderr) and exits 1.
 */
export function printResult(json: boolean, value: Record<string, unknown>, text: string): void {
  // Control characters from task content are printed escaped (issue 12), in both forms.
  process.stdout.write(json ? terminalSafeJson(value) + '\n' : escapeControls(text.endsWith('\n') || !text ? text : text + '\n'));
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
  if (json) process.stdout.write(terminalSafeJson({ success: false, error: message }) + '\n');
  else process.stderr.write(`${escapeControls(text)}\n`);
  process.exitCode = 1;
}
