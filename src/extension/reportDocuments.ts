import * as vscode from 'vscode';

/** URI scheme of Ralph's read-only report editors (Doctor, Status). */
export const REPORT_SCHEME = 'ralph';

/**
 * Read-only virtual documents for reports (`ralph:/Ralph Doctor.txt`, `ralph:/Ralph Status.txt`): the text is set,
 * then the editor is opened or refreshed. Virtual documents cannot be edited or saved by the user.
 */
export class ReportDocuments implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly texts = new Map<string, string>();

  /** Shows `text` as the document named `name` (e.g. `Ralph Doctor.txt`); returns the text. */
  async show(name: string, text: string): Promise<string> {
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${name}` });
    this.texts.set(uri.path, text);
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return text;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  dispose(): void {
    this.changed.dispose();
  }
}
