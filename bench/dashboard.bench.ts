/**
 * Dashboard page benchmark (issue 15), in headless Chromium over the production page bundle:
 * - time to render 1,000,000 Ralph log lines delivered as 1,000 numbered updates of 1,000 lines (each parsed by
 *   the protocol's schema, appended to the bounded buffer, rendered by the virtualized list with auto-scroll);
 *   one batch per animation frame, so 1,000 frames (16.7 s at 60 Hz) is the floor; baseline: the same batches
 *   only built and cloned (the transport), ratio = the page's whole cost over that;
 * - frame time while streaming (p50 / p95 / max of requestAnimationFrame gaps);
 * - the page's JS heap after the million lines, after a GC (target < 150 MB);
 * - the page bundle size, minified (target ≤ 250 KB; js + css, codicon.ttf reported apart).
 * Prints one JSON object per line: {name, value, unit, ...}.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openDashboardPage } from '../test/support/dashboardPage';
import { state } from '../test/support/dashboardSamples';
import { PROTOCOL_VERSION } from '../src/protocol/dashboard';
import { findRepoRoot } from '../test/support/repoRoot';

const repo = findRepoRoot(__dirname);
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const LINES = 1_000_000;
const BATCH = 1_000;

async function main(): Promise<void> {
  execFileSync(process.execPath, ['esbuild.mjs', '--production', '--only=webview'], { cwd: repo, stdio: 'pipe' });
  const size = (f: string) => fs.statSync(path.join(repo, 'dist', 'webview', f)).size;
  const bundle = size('main.js') + size('main.css');
  emit({
    name: 'dashboard.bundle',
    value: Math.round(bundle / 1024),
    unit: 'KB',
    js: size('main.js'),
    css: size('main.css'),
    font: size('codicon.ttf'),
    target: 250,
  });

  const d = await openDashboardPage(repo);
  try {
    // The page refuses a snapshot of another protocol version (it was 1 when this bench was written: it then waited forever).
    await d.push([{ type: 'snapshot', v: PROTOCOL_VERSION, seq: 1, state: { ...state, log: [] } }]);
    await d.page.locator('[data-testid="run-state"]').waitFor();
    const r = await d.page.evaluate(
      async ({ lines, batch }) => {
        const make = (seq: number, from: number) => ({
          type: 'update',
          seq,
          ops: [
            {
              op: 'log',
              total: from + batch - 1,
              lines: Array.from({ length: batch }, (_, i) => ({
                n: from + i,
                at: 1_700_000_000_000 + from + i,
                kind: (from + i) % 9 === 0 ? 'gate' : 'loop',
                text: `iteration ${(from + i) % 97} · tool Bash · npm test -- --grep "case ${from + i}"`,
              })),
            },
          ],
        });
        const frames: number[] = [];
        let last = performance.now();
        let streaming = true;
        const tick = (t: number) => {
          frames.push(t - last);
          last = t;
          if (streaming) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        const nextFrame = () => new Promise((res) => requestAnimationFrame(res));
        const t0 = performance.now();
        let seq = 1;
        for (let from = 1; from <= lines; from += batch) {
          window.postMessage(make(++seq, from), '*');
          await nextFrame();
        }
        // Wait until the newest line is on screen.
        while (
          !Array.from(document.querySelectorAll('.log-text')).some((e) => e.textContent?.includes(`case ${lines}"`))
        )
          await nextFrame();
        const renderMs = performance.now() - t0;
        streaming = false;
        frames.sort((a, b) => a - b);
        const q = (p: number) => frames[Math.min(frames.length - 1, Math.floor(p * frames.length))]!;
        return {
          renderMs,
          p50: q(0.5),
          p95: q(0.95),
          max: frames[frames.length - 1]!,
          rows: document.querySelectorAll('.log-row').length,
          frames: frames.length,
        };
      },
      { lines: LINES, batch: BATCH },
    );
    const cdp = await d.page.context().newCDPSession(d.page);
    await cdp.send('HeapProfiler.collectGarbage');
    const heap = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number };
    emit({
      name: 'dashboard.log.render1M',
      value: Math.round(r.renderMs),
      unit: 'ms',
      lines: LINES,
      batch: BATCH,
      domRows: r.rows,
    });
    emit({ name: 'dashboard.log.frame.p50', value: +r.p50.toFixed(1), unit: 'ms', frames: r.frames });
    emit({ name: 'dashboard.log.frame.p95', value: +r.p95.toFixed(1), unit: 'ms' });
    emit({ name: 'dashboard.log.frame.max', value: +r.max.toFixed(1), unit: 'ms' });
    emit({ name: 'dashboard.heap.after1M', value: +(heap.usedSize / 1024 / 1024).toFixed(1), unit: 'MB', target: 150 });
    const baseMs = await d.page.evaluate(
      async ({ lines, batch }) => {
        // The transport alone: the same batches built and round-tripped through structured clone and JSON.
        const t0 = performance.now();
        for (let from = 1; from <= lines; from += batch) {
          const m = {
            type: 'update',
            ops: [
              {
                op: 'log',
                lines: Array.from({ length: batch }, (_, i) => ({
                  n: from + i,
                  at: 1_700_000_000_000 + from + i,
                  kind: 'loop',
                  text: `iteration ${(from + i) % 97} · tool Bash · npm test -- --grep "case ${from + i}"`,
                })),
              },
            ],
          };
          JSON.parse(JSON.stringify(structuredClone(m)));
        }
        return performance.now() - t0;
      },
      { lines: LINES, batch: BATCH },
    );
    emit({
      name: 'dashboard.log.transportBaseline1M',
      value: Math.round(baseMs),
      unit: 'ms',
      note: 'build + clone + JSON of the same batches, no parse, no render',
    });
    emit({
      name: 'dashboard.log.render1M.ratio',
      value: +(r.renderMs / baseMs).toFixed(2),
      unit: 'x',
      baseline: 'dashboard.log.transportBaseline1M',
    });
    if (d.problems.length)
      emit({ name: 'dashboard.pageProblems', value: d.problems.length, unit: 'count', first: d.problems[0] });
  } finally {
    await d.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
