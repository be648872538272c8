#!/usr/bin/env node
// A stand-in for Cursor's `cursor-agent` (not installable here), put on PATH by tests as `cursor-agent` and
// `agent`. It checks what the real CLI needs from Ralph, then replays a real capture:
//   - argv: -p --force --trust --output-format stream-json, an optional --model <m> / --resume=<id>, prompt last;
//   - env:  CURSOR_CONFIG_DIR set to an absolute folder that is not the user's ~/.cursor;
//   - stdin closed (the real CLI waits for EOF on an open stdin).
// A violated expectation prints "stub: <why>" on stderr and exits 96.
// Driven by environment variables:
//   RALPH_STUB_REPLAY    capture file written to stdout (in chunks that cut lines)
//   RALPH_STUB_LINES     only the first N lines of it (a stream that stops without a result)
//   RALPH_STUB_STDOUT    extra text written to stdout after the capture (e.g. a bare-text error line)
//   RALPH_STUB_STDERR    text written to stderr
//   RALPH_STUB_EXIT      exit code (default 0)
//   RALPH_STUB_HANG      "1": never exit after replaying (for kill tests)
//   RALPH_STUB_RECORD    file receiving {argv, env, stdin} as JSON, for the test's own assertions
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function fail(why) {
  process.stderr.write(`stub: ${why}\n`);
  process.exit(96);
}

function checkArgv(argv) {
  const required = ['-p', '--force', '--trust'];
  for (const r of required) if (!argv.includes(r)) fail(`missing ${r} in ${JSON.stringify(argv)}`);
  const of = argv.indexOf('--output-format');
  if (of === -1 || argv[of + 1] !== 'stream-json')
    fail(`--output-format stream-json missing in ${JSON.stringify(argv)}`);
  const m = argv.indexOf('--model');
  if (m !== -1 && (!argv[m + 1] || argv[m + 1].startsWith('-'))) fail('--model without a value');
  const prompt = argv[argv.length - 1];
  if (!prompt || prompt.startsWith('-') || prompt === 'stream-json')
    fail(`the prompt is not the last argument: ${JSON.stringify(argv)}`);
}

function checkEnv(env) {
  const dir = env.CURSOR_CONFIG_DIR;
  if (!dir) fail('CURSOR_CONFIG_DIR is not set (the --model choice would persist to ~/.cursor)');
  if (!path.isAbsolute(dir)) fail(`CURSOR_CONFIG_DIR is not absolute: ${dir}`);
  if (path.resolve(dir) === path.join(os.homedir(), '.cursor')) fail('CURSOR_CONFIG_DIR is the user ~/.cursor');
}

/** Resolves 'closed' when stdin is at EOF (ignored or closed); fails when it is a terminal or stays open. */
function checkStdin() {
  let st;
  try {
    st = fs.fstatSync(0);
  } catch {
    return Promise.resolve('closed');
  }
  if (process.stdin.isTTY) fail('stdin is a terminal');
  if (st.isFile() || st.isCharacterDevice()) {
    const n = fs.readSync(0, Buffer.alloc(1), 0, 1, null);
    if (n !== 0) fail('stdin has data');
    return Promise.resolve('closed');
  }
  return new Promise((resolve) => {
    const t = setTimeout(() => fail('stdin is left open (the real cursor-agent would wait for EOF)'), 1500);
    process.stdin.on('data', () => fail('stdin has data'));
    process.stdin.on('end', () => {
      clearTimeout(t);
      resolve('closed');
    });
    process.stdin.resume();
  });
}

function write(stream, data) {
  return new Promise((resolve) => (stream.write(data) ? resolve() : stream.once('drain', resolve)));
}

async function main() {
  const argv = process.argv.slice(2);
  checkArgv(argv);
  checkEnv(process.env);
  const stdin = await checkStdin();
  if (process.env.RALPH_STUB_RECORD) {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          k === 'CURSOR_CONFIG_DIR' ||
          k === 'HOME' ||
          k === 'PWD' ||
          k.startsWith('CURSOR_') ||
          k.startsWith('RALPH_STUB_'),
      ),
    );
    fs.writeFileSync(process.env.RALPH_STUB_RECORD, JSON.stringify({ argv, env, stdin, cwd: process.cwd() }));
  }
  if (process.env.RALPH_STUB_REPLAY) {
    let data = fs.readFileSync(process.env.RALPH_STUB_REPLAY);
    if (process.env.RALPH_STUB_LINES) {
      const lines = data.toString('utf8').split('\n').slice(0, Number(process.env.RALPH_STUB_LINES));
      data = Buffer.from(lines.join('\n') + '\n');
    }
    // Odd chunk sizes so that chunks end mid-line and mid-character.
    for (let i = 0, k = 0; i < data.length; k++) {
      const size = [997, 13, 4093, 1][k % 4];
      await write(process.stdout, data.subarray(i, i + size));
      i += size;
    }
  }
  if (process.env.RALPH_STUB_STDOUT) await write(process.stdout, process.env.RALPH_STUB_STDOUT);
  if (process.env.RALPH_STUB_STDERR) await write(process.stderr, process.env.RALPH_STUB_STDERR);
  if (process.env.RALPH_STUB_HANG === '1') {
    setInterval(() => {}, 1 << 30);
    return;
  }
  process.exitCode = Number(process.env.RALPH_STUB_EXIT ?? 0);
}

main().catch((err) => fail(String((err && err.stack) || err)));
