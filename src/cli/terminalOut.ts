import { visibleText } from '../protocol/visibleText';

/**
 * Where every `ralph` command writes: text a repository controls (titles, reasons, summaries, file names, an agent's
 * words) reaches the terminal with its controls, bidirectional controls and invisible characters shown as escapes
 * (src/protocol/visibleText.ts), in text and JSON alike (the escapes of a JSON document keep its value). A unit test
 * (test/unit/cli/terminalOut.test.ts) fails on a direct `process.stdout.write` / `process.stderr.write` elsewhere
 * in src/cli.
 */
export function writeOut(text: string): boolean {
  return process.stdout.write(visibleText(text));
}

/** {@link writeOut} for stderr. */
export function writeErr(text: string): boolean {
  return process.stderr.write(visibleText(text));
}
