import * as assert from 'node:assert/strict';
import { contextFigure } from '../../../src/core/control/contextFigure';
import {
  formatTokens,
  formatUsd,
  gaugeBackground,
  gaugeText,
  gaugeTooltip,
  presentGauge,
  TOOLTIP_MAX_ITERATIONS,
  type GaugeRun,
} from '../../../src/extension/gauge/gaugeText';

const tokens = (input: number, output: number, cacheRead = 0, cacheCreation = 0) => ({
  input,
  output,
  cacheRead,
  cacheCreation,
});

/** A running run at 142k of a 200k window, warn 148 750, rotate 170 000, $1.23 spent. */
function run(over: Partial<GaugeRun> = {}): GaugeRun {
  return {
    runId: 'r-1',
    folderName: 'app',
    state: 'running',
    agentRunning: false,
    deferredUntil: null,
    endState: null,
    context: contextFigure({ tokens: 142_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 }),
    costUsd: 1.23,
    iterations: [{ iteration: 1, itemId: 'US-001', tokens: tokens(1200, 3400, 140_000, 800), costUsd: 1.23 }],
    totals: tokens(1200, 3400, 140_000, 800),
    earlier: null,
    ...over,
  };
}

describe('the status bar gauge text', () => {
  const at1405 = new Date(2026, 11, 1, 14, 5).getTime();
  const table: [string, Partial<GaugeRun>, string][] = [
    ['a running run between iterations', {}, '$(pulse) 142k/200k 71% · $1.23'],
    ['an agent running: the spinner', { agentRunning: true }, '$(sync~spin) 142k/200k 71% · $1.23'],
    [
      'a run starting, before any figure',
      { state: 'starting', context: null, costUsd: null, iterations: [] },
      '$(sync~spin) Ralph · starting',
    ],
    [
      'pausing: PAUSE asked for, the agent finishes its iteration',
      { state: 'pausing', agentRunning: true },
      '$(sync~spin) 142k/200k 71% · $1.23 · pausing…',
    ],
    ['paused', { state: 'paused' }, '$(debug-pause) 142k/200k 71% · $1.23 · paused'],
    [
      'deferred with a known reset time',
      { state: 'deferred', deferredUntil: at1405 },
      '$(watch) 142k/200k 71% · $1.23 · deferred until 14:05',
    ],
    ['deferred without a reset time', { state: 'deferred' }, '$(watch) 142k/200k 71% · $1.23 · deferred'],
    ['waiting for an answer', { state: 'waiting' }, '$(question) 142k/200k 71% · $1.23 · waiting for an answer'],
    [
      'stopping with the agent still running',
      { state: 'stopping', agentRunning: true },
      '$(sync~spin) 142k/200k 71% · $1.23 · stopping',
    ],
    [
      'ended: the latest figures and how it ended',
      { state: 'ended', endState: 'completed' },
      '$(pulse) 142k/200k 71% · $1.23 · completed',
    ],
    ['crashed', { state: 'crashed' }, '$(error) 142k/200k 71% · $1.23 · crashed'],
    [
      'a sub-cent cost keeps four decimals',
      {
        costUsd: 0.0042,
        context: contextFigure({ tokens: 12_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 }),
      },
      '$(pulse) 12k/200k 6% · $0.0042',
    ],
    ['no cost reported', { costUsd: null }, '$(pulse) 142k/200k 71%'],
    [
      'a 1M window',
      { context: contextFigure({ tokens: 262_000, window: 1_000_000, warnAt: 250_000, rotateAt: 300_000 }) },
      '$(pulse) 262k/1M 26% · $1.23',
    ],
  ];
  for (const [name, over, text] of table) {
    it(`shows ${name}: ${text}`, () => assert.equal(gaugeText(run(over)), text));
  }
});

describe('the status bar gauge background', () => {
  const ctx = (t: number) => ({
    context: contextFigure({ tokens: t, window: 200_000, warnAt: 148_750, rotateAt: 170_000 }),
  });
  const table: [number, ReturnType<typeof gaugeBackground>][] = [
    [0, null],
    [148_749, null],
    [148_750, 'warning'],
    [169_999, 'warning'],
    [170_000, 'error'],
    [199_000, 'error'],
  ];
  for (const [t, bg] of table) {
    it(`is ${bg ?? 'none'} at ${t} tokens (warn 148 750, rotate 170 000)`, () =>
      assert.equal(gaugeBackground(ctx(t)), bg));
  }
  it("follows the run's own thresholds, not fixed percentages", () => {
    assert.equal(
      gaugeBackground({
        context: contextFigure({ tokens: 90_000, window: 200_000, warnAt: 87_500, rotateAt: 100_000 }),
      }),
      'warning',
    );
    assert.equal(
      gaugeBackground({
        context: contextFigure({ tokens: 100_000, window: 200_000, warnAt: 87_500, rotateAt: 100_000 }),
      }),
      'error',
    );
  });
  it('is none before any context figure', () => assert.equal(gaugeBackground({ context: null }), null));
  it('is none once the run has ended or crashed, whatever its last context', () => {
    for (const state of ['ended', 'crashed'] as const)
      assert.equal(gaugeBackground({ ...ctx(199_000), state }), null, state);
    assert.equal(gaugeBackground({ ...ctx(199_000), state: 'paused' }), 'error', 'a paused run still shows it');
  });
});

describe('the status bar gauge tooltip', () => {
  it('lists input, output and cache tokens per iteration and for the run, the thresholds and that cost is an estimate', () => {
    const t = gaugeTooltip(
      run({
        iterations: [
          { iteration: 1, itemId: 'US-001', tokens: tokens(1000, 2000, 50_000, 4000), costUsd: 0.5 },
          { iteration: 2, itemId: 'US-002', tokens: tokens(200, 1400, 90_000, 0), costUsd: 0.73 },
        ],
        totals: tokens(1200, 3400, 140_000, 4000),
      }),
    );
    assert.match(t, /\| input \| output \| cache read \| cache write \| cost \|/);
    assert.match(t, /\| #1 US-001 \| 1k \| 2k \| 50k \| 4k \| \$0\.50 \|/);
    assert.match(t, /\| #2 US-002 \| 200 \| 1\.4k \| 90k \| 0 \| \$0\.73 \|/);
    assert.match(t, /\| \*\*run\*\* \| 1\.2k \| 3\.4k \| 140k \| 4k \| \$1\.23 \|/);
    assert.match(t, /Marks: warn 149k · rotate 170k/);
    assert.match(t, /Context: \*\*142k\/200k 71%\*\* \(142,000 tokens\)/);
    assert.match(t, /Cost is an estimate/);
  });
  it('names the state and, in a multi-root workspace, the folder', () => {
    assert.match(gaugeTooltip(run({ state: 'waiting' }), { multiRoot: true }), /`r-1` in app — waiting for an answer/);
    assert.doesNotMatch(gaugeTooltip(run()), / in app/);
  });
  it(`keeps the last ${TOOLTIP_MAX_ITERATIONS} iterations and sums the older ones into one row`, () => {
    const its = Array.from({ length: 12 }, (_, i) => ({
      iteration: i + 1,
      itemId: null,
      tokens: tokens(100, 100),
      costUsd: 0.1,
    }));
    const t = gaugeTooltip(run({ iterations: its }));
    assert.match(t, /\| #1–4 \| 400 \| 400 \| 0 \| 0 \| \$0\.40 \|/);
    assert.equal((t.match(/^\| #\d+ \|/gm) ?? []).length, TOOLTIP_MAX_ITERATIONS);
  });
  it('adds iterations the run no longer lists one by one to that row', () => {
    const its = Array.from({ length: 10 }, (_, i) => ({
      iteration: i + 91,
      itemId: null,
      tokens: tokens(100, 100),
      costUsd: 0.1,
    }));
    const t = gaugeTooltip(run({ iterations: its, earlier: { count: 90, tokens: tokens(9000, 9000), costUsd: 9 } }));
    assert.match(t, /\| #1–92 \| 9\.2k \| 9\.2k \| 0 \| 0 \| \$9\.20 \|/);
  });
  it('says there are no figures yet for a run that has none', () => {
    assert.match(gaugeTooltip(run({ context: null, iterations: [] })), /no figures yet/);
  });
  it('names the agent, and which agent ran each iteration once a failover used more than one', () => {
    const one = gaugeTooltip(run({ agent: 'claude', iterations: [{ ...run().iterations[0]!, agent: 'claude' }] }));
    assert.match(one, /^\*\*Ralph run\*\* `r-1` — running · agent claude$/m);
    assert.match(one, /\| #1 US-001 \| 1\.2k/, 'one agent: no per-row name');
    const two = gaugeTooltip(
      run({
        agent: 'codex',
        iterations: [
          { iteration: 1, itemId: 'US-001', agent: 'claude', tokens: tokens(1, 1), costUsd: null },
          { iteration: 2, itemId: 'US-001', agent: 'codex', tokens: tokens(2, 2), costUsd: null },
        ],
      }),
    );
    assert.match(two, /— running · agent codex$/m);
    assert.match(two, /\| #1 US-001 · claude \| 1 \|/);
    assert.match(two, /\| #2 US-001 · codex \| 2 \|/);
  });
  it('escapes markdown in item ids', () => {
    assert.match(
      gaugeTooltip(run({ iterations: [{ iteration: 1, itemId: 'a|b_c', tokens: tokens(1, 1), costUsd: null }] })),
      /#1 a\\\|b\\_c \| 1 \| 1 \| 0 \| 0 \| — \|/,
    );
  });
});

describe('gauge figures', () => {
  it('formats tokens as a person reads them', () => {
    assert.deepEqual(
      [0, 999, 1000, 1234, 9_950, 10_000, 142_000, 999_499, 1_000_000, 1_250_000, 12_000_000].map(formatTokens),
      ['0', '999', '1k', '1.2k', '9.9k', '10k', '142k', '999k', '1M', '1.25M', '12M'],
    );
  });
  it('formats USD with two decimals, four under a cent', () => {
    assert.deepEqual([0, 0.004, 0.01, 1.234, 12].map(formatUsd), ['$0.00', '$0.0040', '$0.01', '$1.23', '$12.00']);
  });
  it('gives screen readers the run, its state, context and cost', () => {
    assert.equal(
      presentGauge(run({ state: 'paused' })).ariaLabel,
      'Ralph run r-1, paused, context 142k/200k 71%, cost $1.23',
    );
  });
});
