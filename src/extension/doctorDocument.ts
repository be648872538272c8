import * as vscode from 'vscode';
import { buildDoctorReport, formatDoctorReport } from '../core/doctor/report';

/** URI scheme of the read-only Doctor report editor. */
export const DOCTOR_SCHEME = 'ralph-doctor';

/**
 * Serves the doctor report as a read-only virtual document (`ralph-doctor:/Ralph Doctor.txt`). In an untrusted
 * workspace the agent binaries are located but not executed (Restricted Mode).
 */
export class DoctorDocumentProvider implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private content = '';

  /** Builds the report for every file workspace folder and shows it; returns the text shown. */
  async show(): Promise<string> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    const reports = await Promise.all(folders.map((f) => buildDoctorReport(f.uri.fsPath, { trusted: vscode.workspace.isTrusted })));
    this.content = reports.length ? reports.map(formatDoctorReport).join('\n') : 'Ralph doctor: open a folder to check it.\n';
    const uri = vscode.Uri.from({ scheme: DOCTOR_SCHEME, path: '/Ralph Doctor.txt' });
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return this.content;
  }

  provideTextDocumentContent(): string {
    return this.content;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
