import * as vscode from 'vscode';

/** The one "Ralph" LogOutputChannel; messages carry a `[component]` prefix. The user's log level applies. */
export class Logger implements vscode.Disposable {
  private readonly channel: vscode.LogOutputChannel;
  constructor(name = 'Ralph') {
    this.channel = vscode.window.createOutputChannel(name, { log: true });
  }
  trace(component: string, msg: string): void {
    this.channel.trace(`[${component}] ${msg}`);
  }
  debug(component: string, msg: string): void {
    this.channel.debug(`[${component}] ${msg}`);
  }
  info(component: string, msg: string): void {
    this.channel.info(`[${component}] ${msg}`);
  }
  warn(component: string, msg: string): void {
    this.channel.warn(`[${component}] ${msg}`);
  }
  error(component: string, msg: string | Error): void {
    this.channel.error(`[${component}] ${msg instanceof Error ? msg.message : msg}`);
  }
  show(): void {
    this.channel.show(true);
  }
  dispose(): void {
    this.channel.dispose();
  }
}
