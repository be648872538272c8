import * as path from 'node:path';
import * as vscode from 'vscode';
import type { FileProblem } from '../core/store/parseError';
import * as notify from './notify';

/** The action on a file problem's notification. */
export const OPEN_FILE = 'Open File';

/**
 * A Ralph error notification for a file Ralph cannot use, naming it `file:line:column` relative to the folder, with
 * **Open File** (the cursor at the problem). Replaces VS Code's generic "command resulted in an error" modal.
 */
export async function showFileProblem(problem: FileProblem, folder: string): Promise<void> {
  const abs = path.isAbsolute(problem.file) ? problem.file : path.join(folder, problem.file);
  const rel = path.relative(folder, abs).split(path.sep).join('/');
  const where = problem.line > 0 ? `${rel}:${problem.line}:${problem.column}` : rel;
  const choice = await notify.showErrorMessage(`Ralph: ${where}: ${problem.message}`, OPEN_FILE);
  if (choice !== OPEN_FILE) return;
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(abs));
  const pos = new vscode.Position(Math.max(0, problem.line - 1), Math.max(0, problem.column - 1));
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos) });
}

/** The file problem an error carries (core's `FileProblemError`), if any. */
export function fileProblemOf(err: unknown): FileProblem | undefined {
  const p = (err as { problem?: unknown } | null)?.problem;
  if (
    p &&
    typeof p === 'object' &&
    typeof (p as FileProblem).file === 'string' &&
    typeof (p as FileProblem).message === 'string'
  )
    return p as FileProblem;
  return undefined;
}
