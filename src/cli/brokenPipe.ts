import { writeSync } from 'node:fs';
import { visibleText } from '../protocol/visibleText';

/**
 * Ends the process quietly when the reader of stdout or stderr goes away (`ralph status --json | head -c 100`):
 * an `EPIPE` on either stream exits with the exit code set so far, without a stack trace. Other stream errors
 * are thrown as before. Its own module so that the small entry (src/cli/entry.ts) loads nothing else for it.
 * Installed once per process (a second call adds nothing).
 */
export function endQuietlyOnBrokenPipe(): void {
  if (installed) return;
  installed = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}

let installed = false;

/**
 * Writes `text` (UTF-8) to file descriptor 1 synchronously, without creating `process.stdout`: for a pipe that
 * stream is a `net.Socket`, and loading and building it was ~5 % of a `ralph waves check` pass (bench/waves.bench.ts)
 * and a few ms of a cached `ralph status`. The bytes are the ones `process.stdout.write(text)` would write.
 * A broken pipe (`EPIPE`) ends the process quietly with the exit code set so far, as {@link endQuietlyOnBrokenPipe}
 * does, so set the exit code first; anything else the descriptor refuses (`EAGAIN` on a full non-blocking pipe, a
 * closed descriptor) hands the rest, from the first byte not written, to `process.stdout`, which waits for it or
 * reports it. Text a repository controls is shown as in {@link visibleText} (src/cli/terminalOut.ts). Use it for a
 * program's one final output only: a later `process.stdout.write` would come after it.
 */
export function writeStdoutSync(text: string): void {
  const buf = Buffer.from(visibleText(text), 'utf8');
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(1, buf, off, buf.length - off);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EPIPE')
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    endQuietlyOnBrokenPipe();
    process.stdout.write(buf.subarray(off));
  }
}
