import * as vscode from 'vscode';

/** URI scheme of Ralph's read-only report editors (Doctor, Status). */
export const REPORT_SCHEME = 'ralph';

/**
 * Read-only virtual documents for reports (`ralph:/Ralph Doctor.txt`, `ralph:/Ralph Status.txt`): the text is set,
 * then the editor is opened or refreshed. Virtual documents cannot be edited or saved by the user. A *live* report
 * ({@link showLive}) is rebuilt by {@link refresh} while it is open (Ralph: Status follows the store).
 */
export class ReportDocuments implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly texts = new Map<string, string>();
  private readonly builders = new Map<string, () => Promise<string>>();

  static uriOf(name: string): vscode.Uri {
    return vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${name}` });
  }

  /** Shows `text` as the document named `name` (e.g. `Ralph Doctor.txt`); returns the text. */
  async show(name: string, text: string): Promise<string> {
    const uri = ReportDocuments.uriOf(name);
    this.texts.set(uri.path, text);
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return text;
  }

  /** Shows the report `name` built by `build`, and rebuilds it on every {@link refresh} while it is open. */
  async showLive(name: string, build: () => Promise<string>): Promise<string> {
    this.builders.set(ReportDocuments.uriOf(name).path, build);
    return this.show(name, await build());
  }

  /** Rebuilds a live report if its document is open; returns whether it did. */
  async refresh(name: string): Promise<boolean> {
    const uri = ReportDocuments.uriOf(name);
    const build = this.builders.get(uri.path);
    if (!build || !vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) return false;
    this.texts.set(uri.path, await build());
    this.changed.fire(uri);
    return true;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  dispose(): void {
    this.changed.dispose();
  }
}
