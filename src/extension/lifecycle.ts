import type * as vscode from 'vscode';

/**
 * Base for long-lived objects: `_register` collects disposables, `dispose` frees them once, and anything
 * registered after disposal is disposed at once. Pattern: microsoft/vscode-pull-request-github `lifecycle.ts`.
 */
export abstract class Disposable implements vscode.Disposable {
  private readonly _disposables: { dispose(): unknown }[] = [];
  private _isDisposed = false;

  protected get isDisposed(): boolean {
    return this._isDisposed;
  }

  protected _register<T extends { dispose(): unknown }>(d: T): T {
    if (this._isDisposed) d.dispose();
    else this._disposables.push(d);
    return d;
  }

  dispose(): void {
    if (this._isDisposed) return;
    this._isDisposed = true;
    while (this._disposables.length) this._disposables.pop()?.dispose();
  }
}
