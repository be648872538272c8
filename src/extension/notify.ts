import * as vscode from 'vscode';
import { MAX_BLOCK_CHARS, visibleText } from '../protocol/visibleText';

/**
 * The one door of the extension's notifications: every message and modal detail may carry text a repository controls
 * (a title, a reason, a file name, an error naming a file), so its control characters, bidirectional controls and
 * invisible characters are shown as escapes (src/protocol/visibleText.ts) before VS Code shows it. Same signatures as
 * `vscode.window.show*Message` with string buttons (ours, never escaped). A unit test
 * (test/unit/repo/oneDoor.test.ts) fails on a direct `vscode.window.show*Message` elsewhere.
 */
type Rest<T extends string> = T[] | [vscode.MessageOptions, ...T[]];
type Show = (message: string, ...rest: unknown[]) => Thenable<string | undefined>;

function shown<T extends string>(show: Show, message: string, rest: Rest<T>): Thenable<T | undefined> {
  const safe = rest.map((r) =>
    typeof r === 'object' && r !== null && typeof r.detail === 'string'
      ? { ...r, detail: visibleText(r.detail, { maxChars: MAX_BLOCK_CHARS }) }
      : r,
  );
  return show(visibleText(message, { maxChars: MAX_BLOCK_CHARS }), ...safe) as Thenable<T | undefined>;
}

/** `vscode.window.showInformationMessage`, with repository text shown visibly. */
export function showInformationMessage<T extends string>(message: string, ...rest: Rest<T>): Thenable<T | undefined> {
  return shown(vscode.window.showInformationMessage as Show, message, rest);
}

/** `vscode.window.showWarningMessage`, with repository text shown visibly. */
export function showWarningMessage<T extends string>(message: string, ...rest: Rest<T>): Thenable<T | undefined> {
  return shown(vscode.window.showWarningMessage as Show, message, rest);
}

/** `vscode.window.showErrorMessage`, with repository text shown visibly. */
export function showErrorMessage<T extends string>(message: string, ...rest: Rest<T>): Thenable<T | undefined> {
  return shown(vscode.window.showErrorMessage as Show, message, rest);
}
