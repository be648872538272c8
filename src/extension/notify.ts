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

/** The button of {@link confirmCancelFirst} that declines; also the default, focused one (Enter). */
export const CANCEL_BUTTON = 'Cancel';

/**
 * A modal warning whose default button (focused, so Enter presses it) is **Cancel**, not `action`: for a choice that
 * lets things run with the user's permissions. VS Code focuses a modal's first button and always puts its close
 * affordance (Escape, ×) last, so the first button is a plain "Cancel" item, then `action`, then a "Close" close
 * affordance (VS Code would add its own "Cancel" there otherwise). Resolves true only when `action` was chosen.
 */
export async function confirmCancelFirst(message: string, detail: string, action: string): Promise<boolean> {
  const cancel: vscode.MessageItem = { title: CANCEL_BUTTON };
  const act: vscode.MessageItem = { title: action };
  const close: vscode.MessageItem = { title: 'Close', isCloseAffordance: true };
  const chosen = await vscode.window.showWarningMessage(
    visibleText(message, { maxChars: MAX_BLOCK_CHARS }),
    { modal: true, detail: visibleText(detail, { maxChars: MAX_BLOCK_CHARS }) },
    cancel,
    act,
    close,
  );
  return chosen === act;
}
