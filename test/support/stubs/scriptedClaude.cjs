#!/usr/bin/env node
// A light stand-in for the Claude Code CLI (`claude -p --output-format stream-json --verbose … -- <prompt>`) for the
// component tests of the loop's own logic (STOP, PAUSE, sources, verification, unticking): it talks to the scripted
// model server (test/support/modelServer.ts, Anthropic dialect, $ANTHROPIC_BASE_URL) as the real CLI does, so a test's
// script and its assertions on the requests stay as they are, but it starts in a tenth of the time and CPU of the
// real CLI (≈ 0.1 s of CPU against ≈ 2 s). What only the real CLI can show (its retries and errors, its hooks'
// wire format, its tools' own behaviour) stays with tests that run it.
// What it does, in the shapes of the recorded streams (test/fixtures/streams/claude/recorded/):
// - prints `system/init`, then for each model reply one `assistant` line per content block, and for each tool call a
//   `user` line with its `tool_result`; at the end a `result` line (usage summed over the replies, `num_turns`);
// - tools: Bash (bash -c in the working folder, stdout and stderr joined, is_error on a non-zero exit), Write, Edit
//   (the first occurrence; is_error when the old text is missing), Read;
// - PreToolUse command hooks of `--settings` whose matcher matches the tool run first, with the hook's stdin JSON: a
//   `permissionDecision: deny` (or exit 2) refuses the call (`PreToolUse:<tool> hook error: <reason>` as the tool's
//   error), `updatedInput` replaces the input;
// - a model request that fails (HTTP error, a dropped connection) ends the run: a `result` with `is_error`, exit 1.
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const prompt = dash >= 0 ? argv.slice(dash + 1).join(' ') : argv[argv.length - 1] || '';
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 && (dash < 0 || i < dash) ? argv[i + 1] : undefined;
};
if (argv.includes('--version')) {
  process.stdout.write('2.1.328 (Claude Code)\n');
  process.exit(0);
}
const settings = opt('--settings') ? JSON.parse(opt('--settings')) : {};
const model = opt('--model') || 'claude-sonnet-4-6';
const sessionId = opt('--resume') || randomUUID();
const cwd = process.cwd();
const out = (o) => process.stdout.write(`${JSON.stringify({ ...o, session_id: sessionId, uuid: randomUUID() })}\n`);

const TOOLS = ['Bash', 'Write', 'Edit', 'Read'].map((name) => ({
  name,
  description: `${name} tool`,
  input_schema: { type: 'object', properties: {} },
}));

/** POSTs one Messages request (streamed) and resolves with the assembled message, or rejects with the failure. */
function ask(messages) {
  const url = new URL('/v1/messages?beta=true', process.env.ANTHROPIC_BASE_URL || 'http://127.0.0.1:1');
  const body = JSON.stringify({ model, max_tokens: 32000, stream: true, tools: TOOLS, messages });
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-api-key': process.env.ANTHROPIC_API_KEY || '',
          'anthropic-version': '2023-06-01',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('API Error: Connection error.')));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`API Error: ${res.statusCode} ${text}`));
          const message = { id: '', content: [], usage: {}, stop_reason: null };
          const partial = new Map();
          for (const block of text.split('\n\n')) {
            const data = block.split('\n').find((l) => l.startsWith('data: '));
            if (!data) continue;
            const ev = JSON.parse(data.slice(6));
            if (ev.type === 'message_start') Object.assign(message, ev.message, { content: [] });
            else if (ev.type === 'content_block_start') partial.set(ev.index, { ...ev.content_block, json: '' });
            else if (ev.type === 'content_block_delta') {
              const b = partial.get(ev.index);
              if (ev.delta.type === 'text_delta') b.text += ev.delta.text;
              if (ev.delta.type === 'input_json_delta') b.json += ev.delta.partial_json;
            } else if (ev.type === 'content_block_stop') {
              const { json, ...b } = partial.get(ev.index);
              message.content.push(b.type === 'tool_use' ? { ...b, input: json ? JSON.parse(json) : {} } : b);
            } else if (ev.type === 'message_delta') {
              message.stop_reason = ev.delta.stop_reason;
              Object.assign(message.usage, ev.usage);
            } else if (ev.type === 'message_stop') return resolve(message);
          }
          reject(new Error('API Error: Connection error.'));
        });
      },
    );
    req.on('error', () => reject(new Error('API Error: Connection error.')));
    req.end(body);
  });
}

/** Runs the PreToolUse hooks that match `name`: `{deny: reason}`, `{input}` (maybe updated). */
function preToolUse(name, input, id) {
  for (const group of (settings.hooks && settings.hooks.PreToolUse) || []) {
    if (group.matcher && !new RegExp(`^(?:${group.matcher})$`).test(name)) continue;
    for (const h of group.hooks || []) {
      if (h.type !== 'command') continue;
      const stdin = JSON.stringify({
        session_id: sessionId,
        transcript_path: path.join(process.env.HOME || cwd, '.claude', 'projects', `${sessionId}.jsonl`),
        cwd,
        permission_mode: opt('--permission-mode') || 'default',
        hook_event_name: 'PreToolUse',
        tool_name: name,
        tool_input: input,
        tool_use_id: id,
      });
      const r = spawnSync('bash', ['-c', h.command], { input: stdin, encoding: 'utf8', cwd });
      if (r.status === 2) return { deny: (r.stderr || '').trim() };
      let answer;
      try {
        answer = r.stdout.trim() ? JSON.parse(r.stdout) : undefined;
      } catch {
        answer = undefined;
      }
      const o = answer && answer.hookSpecificOutput;
      if (o && o.permissionDecision === 'deny') return { deny: o.permissionDecisionReason || 'denied' };
      if (o && o.updatedInput) input = o.updatedInput;
    }
  }
  return { input };
}

/** Runs one tool call: `{content, isError}`. */
function runTool(name, input) {
  const file = (p) => path.resolve(cwd, String(p));
  try {
    if (name === 'Bash') {
      const r = spawnSync('bash', ['-c', String(input.command)], { cwd, encoding: 'utf8' });
      const text = `${r.stdout}${r.stderr}`.replace(/\n$/, '');
      return r.status === 0 ? { content: text } : { content: `Exit code ${r.status}\n${text}`, isError: true };
    }
    if (name === 'Write') {
      fs.mkdirSync(path.dirname(file(input.file_path)), { recursive: true });
      fs.writeFileSync(file(input.file_path), String(input.content));
      return { content: `File created successfully at: ${input.file_path}` };
    }
    if (name === 'Edit') {
      const before = fs.readFileSync(file(input.file_path), 'utf8');
      if (!before.includes(input.old_string))
        return { content: `String to replace not found in file.\nString: ${input.old_string}`, isError: true };
      fs.writeFileSync(
        file(input.file_path),
        before.replace(input.old_string, () => input.new_string),
      );
      return { content: `The file ${input.file_path} has been updated.` };
    }
    if (name === 'Read') return { content: fs.readFileSync(file(input.file_path), 'utf8') };
    return { content: `No such tool available: ${name}`, isError: true };
  } catch (e) {
    return { content: String(e.message || e), isError: true };
  }
}

async function main() {
  out({ type: 'system', subtype: 'init', cwd, tools: TOOLS.map((t) => t.name), model, permissionMode: 'default' });
  const messages = [{ role: 'user', content: [{ type: 'text', text: prompt }] }];
  const usage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  let turns = 0;
  let last = '';
  const started = Date.now();
  for (;;) {
    let message;
    try {
      message = await ask(messages);
    } catch (e) {
      out({ type: 'result', subtype: 'success', is_error: true, result: e.message, num_turns: turns, usage });
      process.exit(1);
    }
    turns++;
    for (const k of Object.keys(usage)) usage[k] += message.usage[k] || 0;
    for (const block of message.content)
      out({
        type: 'assistant',
        message: { ...message, type: 'message', role: 'assistant', content: [block] },
        parent_tool_use_id: null,
      });
    messages.push({ role: 'assistant', content: message.content });
    const calls = message.content.filter((b) => b.type === 'tool_use');
    last = message.content
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('\n');
    if (message.stop_reason !== 'tool_use' || !calls.length) break;
    const results = [];
    for (const c of calls) {
      const hook = preToolUse(c.name, c.input, c.id);
      const r =
        hook.deny !== undefined
          ? { content: `PreToolUse:${c.name} hook error: ${hook.deny}`, isError: true }
          : runTool(c.name, hook.input);
      const result = { type: 'tool_result', content: r.content, is_error: !!r.isError, tool_use_id: c.id };
      results.push(result);
      out({ type: 'user', message: { role: 'user', content: [result] }, parent_tool_use_id: null });
    }
    messages.push({ role: 'user', content: results });
  }
  out({
    type: 'result',
    subtype: 'success',
    is_error: false,
    duration_ms: Date.now() - started,
    num_turns: turns,
    result: last,
    stop_reason: 'end_turn',
    total_cost_usd: (usage.input_tokens * 3 + usage.output_tokens * 15) / 1e6,
    usage,
  });
}

void main();
