import type { WebviewApi } from 'vscode-webview';
import type { PageMessage } from '../src/protocol/dashboard';

/** What the page keeps with `setState` (UI state only; restored after a reload before the first render). */
export interface PageUiState {
  filter?: unknown;
  sort?: unknown;
  follow?: boolean;
}

let api: WebviewApi<PageUiState> | undefined;

declare function acquireVsCodeApi<S>(): WebviewApi<S>;

/** VS Code's webview API, acquired once (a second `acquireVsCodeApi()` throws). */
export function vscodeApi(): WebviewApi<PageUiState> {
  api ??= acquireVsCodeApi<PageUiState>();
  return api;
}

/** Posts a protocol message to the host. */
export function postToHost(msg: PageMessage): void {
  vscodeApi().postMessage(msg);
}
