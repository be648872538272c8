import { writeSync } from 'node:fs';

/**
 * Ends the process quietly when the reader of stdout or stderr goes away (`ralph status --json | head -c 100`):
 * an `EPIPE` on either stream exits with the exit code set so far, without a stack trace. Other stream errors
 * are thrown as before. Its own module so that the small entry (src/cli/entry.ts) loads nothing else for it.
 */
export function endQuietlyOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}

/**
 * Prints `text` on stdout with `fs.writeSync` on descriptor 1, without creating the `process.stdout` stream (its
 * set-up costs a cached `ralph status` a few ms: issue 10 speed), and sets `process.exitCode` to `exitCode` first.
 * A reader gone (`EPIPE`) ends the process quietly with that code, as {@link endQuietlyOnBrokenPipe}; anything else the
 * descriptor refuses (`EAGAIN` on a non-blocking pipe, a closed descriptor) goes to the stream as before, from the
 * first byte not written.
 */
export function printAnswer(text: string, exitCode: number): void {
  process.exitCode = exitCode;
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  try {
    while (at < bytes.length) at += writeSync(1, bytes, at);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EPIPE') process.exit(exitCode);
    endQuietlyOnBrokenPipe();
    process.stdout.write(bytes.subarray(at));
  }
}
