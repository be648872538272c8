// What the stream recorders (record-streams.ts, record-agent-streams.ts, record-gemini-copilot-streams.ts) share: the
// temp workspace and HOME of one recording, the placeholder their temp paths are written as (so that a re-recording
// changes only what the CLI changed), and the entry point's error handling.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir } from '../test/support/tempFolder';

/** What temp paths read in a recorded file. */
export const PLACEHOLDER = '/tmp/ralph-record';

/** The folders of one recording: `cwd` (the agent's workspace) and `home` under one temp folder `tmp`. */
export interface RecordingFolders {
  tmp: string;
  cwd: string;
  home: string;
  /**
   * `text` with the temp folder (as given and with its links resolved) written as {@link PLACEHOLDER}; with
   * `dashed`, also its dashed form (Claude Code names its projects folder under HOME after it).
   */
  clean(text: string, o?: { dashed?: boolean }): string;
  dispose(): void;
}

export function recordingFolders(): RecordingFolders {
  const tmp = makeTempDir('ralph-record-');
  const cwd = path.join(tmp, 'ws');
  const home = path.join(tmp, 'home');
  fs.mkdirSync(cwd);
  fs.mkdirSync(home);
  const dash = (p: string) => p.replace(/[/.]/g, '-');
  return {
    tmp,
    cwd,
    home,
    clean: (text, o = {}) =>
      [fs.realpathSync(tmp), tmp].reduce((acc, p) => {
        const plain = acc.split(p).join(PLACEHOLDER);
        return o.dashed ? plain.split(dash(p)).join(dash(PLACEHOLDER)) : plain;
      }, text),
    dispose: () => fs.rmSync(tmp, { recursive: true, force: true }),
  };
}

/** Runs a recorder's `main`: an error is printed and the process exits 1. */
export function runRecorder(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  });
}
