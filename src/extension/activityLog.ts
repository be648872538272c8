import * as path from 'node:path';
import { ralphFile } from '../core/model/ralphPaths';
import * as vscode from 'vscode';
import * as notify from './notify';

/** `.ralph/activity.log` of a folder: every run's activity, appended (the latest run at its end). */
export function activityLogPath(folder: string): string {
  return ralphFile(folder, 'activityLog');
}

/**
 * **Ralph: Open Log**: opens the folder's activity log with the cursor on its last line and that line in view, since the
 * latest run is at the end (not at line 1). Says so when the folder has no log yet.
 */
export async function openActivityLog(folder: string | undefined): Promise<vscode.TextEditor | undefined> {
  if (!folder) {
    void notify.showInformationMessage('Ralph: open a folder to see its activity log.');
    return undefined;
  }
  let doc: vscode.TextDocument;
  try {
    doc = await vscode.workspace.openTextDocument(vscode.Uri.file(activityLogPath(folder)));
  } catch {
    void notify.showInformationMessage(
      `Ralph: no activity log yet in ${path.basename(folder)} (.ralph/activity.log is written by the first run).`,
    );
    return undefined;
  }
  const last = Math.max(0, doc.lineCount - 1);
  const end = new vscode.Position(last, 0);
  const editor = await vscode.window.showTextDocument(doc, { preview: false, selection: new vscode.Range(end, end) });
  editor.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}
