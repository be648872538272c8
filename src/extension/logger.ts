import * as vscode from 'vscode';
import { visibleText } from '../protocol/visibleText';

/**
 * The one "Ralph" LogOutputChannel; messages carry a `[component]` prefix. The user's log level applies. Messages
 * carry text a repository controls (titles, reasons, an agent's words): shown as in src/protocol/visibleText.ts.
 */
export class Logger implements vscode.Disposable {
  private readonly channel: vscode.LogOutputChannel;
  constructor(name = 'Ralph') {
    this.channel = vscode.window.createOutputChannel(name, { log: true });
  }
  trace(component: string, msg: string): void {
    this.channel.trace(visibleText(`[${component}] ${msg}`));
  }
  debug(component: string, msg: string): void {
    this.channel.debug(visibleText(`[${component}] ${msg}`));
  }
  info(component: string, msg: string): void {
    this.channel.info(visibleText(`[${component}] ${msg}`));
  }
  warn(component: string, msg: string): void {
    this.channel.warn(visibleText(`[${component}] ${msg}`));
  }
  error(component: string, msg: string | Error): void {
    this.channel.error(visibleText(`[${component}] ${msg instanceof Error ? msg.message : msg}`));
  }
  show(): void {
    this.channel.show(true);
  }
  dispose(): void {
    this.channel.dispose();
  }
}
