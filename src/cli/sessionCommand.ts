import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { findAdapter } from '../core/agents/registry';
import { AGENT_NAMES } from '../core/model/agentNames';
import { type SessionSummary, inspectStream } from '../core/agents/inspect';
import { loadConfig } from '../core/store/loadConfig';
import { FileProblemError } from '../core/store/parseError';
import { resolveFolder } from './folder';
import { writeOut, writeErr } from './terminalOut';

/**
 * `ralph session inspect <file|-> [--agent claude|cursor-agent] [--json]`: the summary of a recorded agent
 * stream (a past iteration's log). Without `--agent` the agent is detected; a stream no adapter knows is
 * summarised as `unknown`. Exit 0 whatever the stream holds (rate limits, errors, noise are reported, not
 * failures); 1 when the file cannot be read; 2 on a usage error.
 */
export function registerSessionCommand(program: Command): void {
  const session = program.command('session').description('Work with recorded agent sessions (stream-json logs)');
  session
    .command('inspect')
    .description(
      'Summarise a recorded agent stream: events, tokens, context, cost, tools, signals, rate limits, errors',
    )
    .argument('<file>', 'stream-json log to read, or - for stdin')
    .option('--agent <name>', `the agent that wrote it (${AGENT_NAMES.join(', ')}); default: detect`)
    .option(
      '--json',
      'print the summary as JSON: {agent, events, tokens{input,output,cacheRead,cacheCreation}, contextLast, contextPeak, contextWindow, costUsd, turns, toolUses, signals, rateLimits, errors, nonJsonLines, outcome, …}',
    )
    .action(async (file: string, opts: { agent?: string; json?: boolean }, cmd: Command) => {
      let adapter = undefined;
      if (opts.agent) {
        adapter = findAdapter(opts.agent);
        if (!adapter) {
          writeErr(`ralph: unknown agent "${opts.agent}" (known: ${AGENT_NAMES.join(', ')})\n`);
          process.exitCode = 2;
          return;
        }
      }
      const config = await loadConfig(resolveFolder(cmd));
      let input: AsyncIterable<Uint8Array>;
      if (file === '-') {
        input = process.stdin;
      } else {
        const st = await stat(file).catch((err: NodeJS.ErrnoException) => {
          throw new FileProblemError({
            file,
            line: 0,
            column: 0,
            message: `cannot read: ${err.code === 'ENOENT' ? 'no such file' : err.message}`,
          });
        });
        if (!st.isFile()) throw new FileProblemError({ file, line: 0, column: 0, message: 'not a file' });
        input = createReadStream(file, { highWaterMark: 1024 * 1024 });
      }
      const summary = await inspectStream(input, {
        adapter: adapter ?? null,
        maxLineBytes: config.maxLineBytes,
        contextWindowTokens: config.contextWindowTokens,
        thresholds: {
          warnThresholdTokens: config.warnThresholdTokens,
          rotateThresholdTokens: config.rotateThresholdTokens,
        },
      });
      writeOut(opts.json ? JSON.stringify(summary, null, 2) + '\n' : formatSummary(file, summary));
      process.exitCode = 0;
    });
}

const fmt = (n: number): string => n.toLocaleString('en-US');

/** The human-readable form of a summary. */
export function formatSummary(file: string, s: SessionSummary): string {
  const lines: string[] = [];
  lines.push(
    `${file === '-' ? 'stdin' : file}: ${s.agent}${s.model ? ` (${s.model})` : ''}${s.sessionId ? `, session ${s.sessionId}` : ''}`,
  );
  lines.push(`  outcome   ${s.outcome.kind}: ${s.outcome.reason}`);
  const pct = s.contextWindow
    ? ` (${((s.contextLast / s.contextWindow) * 100).toFixed(1)}% of ${fmt(s.contextWindow)})`
    : '';
  lines.push(
    `  context   ${fmt(s.contextLast)} tokens${s.contextEstimated ? ' (estimate)' : ''}${pct}, peak ${fmt(s.contextPeak)}; warn ${fmt(s.thresholds.warn)}, rotate ${fmt(s.thresholds.rotate)}`,
  );
  lines.push(
    `  tokens    input ${fmt(s.tokens.input)}, output ${fmt(s.tokens.output)}, cache read ${fmt(s.tokens.cacheRead)}, cache write ${fmt(s.tokens.cacheCreation)}`,
  );
  lines.push(`  cost      ${s.costUsd === null ? 'not reported' : `$${s.costUsd.toFixed(4)}`}; turns ${s.turns}`);
  const tools = Object.entries(s.toolUses)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  lines.push(`  tools     ${tools || 'none'}`);
  const events = Object.entries(s.events)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  lines.push(`  events    ${events || 'none'}`);
  if (s.signals.length)
    lines.push(
      `  signals   ${s.signals.map((x) => `${x.kind} <${x.system}>${x.value}${x.reason ? ` (${x.reason})` : ''}`).join(', ')}`,
    );
  for (const r of s.rateLimits) {
    const extra = r.attempts ? `, ${r.attempts} retr${r.attempts === 1 ? 'y' : 'ies'} of ${r.maxRetries}` : '';
    lines.push(
      `  limit     ${r.source} ${r.status ?? ''}${r.resetsAt ? `, resets ${r.resetsAt}` : ''}${extra}${r.message ? `: ${r.message}` : ''}`,
    );
  }
  for (const e of s.errors) lines.push(`  error     ${e.source}${e.status ? ` ${e.status}` : ''}: ${e.message}`);
  if (s.nonJsonLines || s.droppedLongLines)
    lines.push(
      `  noise     ${s.nonJsonLines} non-JSON line(s) (${s.malformedJsonLines} damaged JSON), ${s.droppedLongLines} over-long line(s) dropped`,
    );
  return lines.join('\n') + '\n';
}
