import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { PlanSnapshot } from '../core/model/plan';

/** Reads a folder's plan graph; `PlanLoader` is the one the extension uses. */
export type LoadPlan = (folder: string) => Promise<PlanSnapshot>;

/**
 * Reads plan graphs on one worker thread (`dist/planWorker.js`, started on first use and kept), so a reload of a
 * 5,000-item plan costs the extension host only the structured clone of the result (bench: `store`,
 * `plan_reload_event_loop_p99`). Requests for a folder whose read is under way share it; a request made while a read
 * runs gets a fresh read after it (the files may have changed since that read began). Without the worker file (unit
 * tests on plain Node) it falls back to `fallback` on the main thread. `dispose` ends the worker; pending reads reject.
 */
export class PlanLoader {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (p: PlanSnapshot) => void; reject: (e: Error) => void }>();
  private readonly inFlight = new Map<string, { promise: Promise<PlanSnapshot>; again?: Promise<PlanSnapshot> }>();
  private disposed = false;

  constructor(
    private readonly workerFile: string,
    private readonly fallback: LoadPlan,
  ) {}

  /** The plan graph of `folder` as the files are now (read on the worker thread when it exists). */
  load(folder: string): Promise<PlanSnapshot> {
    const cur = this.inFlight.get(folder);
    if (cur) {
      // A read is under way: it may predate the change that asked for this one, so queue exactly one more.
      cur.again ??= cur.promise.catch(() => undefined).then(() => this.start(folder));
      return cur.again;
    }
    return this.start(folder);
  }

  private start(folder: string): Promise<PlanSnapshot> {
    const promise = this.read(folder).finally(() => {
      const cur = this.inFlight.get(folder);
      if (cur?.promise !== promise) return;
      if (cur.again) this.inFlight.set(folder, { promise: cur.again });
      else this.inFlight.delete(folder);
    });
    this.inFlight.set(folder, { promise });
    return promise;
  }

  private read(folder: string): Promise<PlanSnapshot> {
    if (this.disposed) return Promise.reject(new Error('the plan loader is disposed'));
    const worker = this.ensureWorker();
    if (!worker) return this.fallback(folder);
    const id = this.nextId++;
    return new Promise<PlanSnapshot>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // A read under way keeps the process alive (a CLI, a bench); an idle worker does not.
      worker.ref();
      worker.postMessage({ id, folder });
    });
  }

  private ensureWorker(): Worker | undefined {
    if (this.worker) return this.worker;
    if (!fs.existsSync(this.workerFile)) return undefined;
    const w = new Worker(this.workerFile);
    w.on('message', (m: { id: number; plan?: PlanSnapshot; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (!this.pending.size) w.unref();
      if (m.plan) p.resolve(m.plan);
      else p.reject(new Error(m.error ?? 'the plan worker answered nothing'));
    });
    const fail = (err: Error) => {
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.worker = undefined;
    };
    w.on('error', fail);
    w.on('exit', (code) => {
      if (!this.disposed) fail(new Error(`the plan worker exited (code ${code})`));
    });
    // The worker must not keep a process (the CLI, a test) alive on its own.
    w.unref();
    this.worker = w;
    return w;
  }

  dispose(): void {
    this.disposed = true;
    const w = this.worker;
    this.worker = undefined;
    for (const p of this.pending.values()) p.reject(new Error('the plan loader is disposed'));
    this.pending.clear();
    void w?.terminate();
  }
}

/** Where the worker bundle sits next to the extension bundle (`dist/planWorker.js`). */
export function planWorkerFile(extensionBundleDir: string): string {
  return path.join(extensionBundleDir, 'planWorker.js');
}
