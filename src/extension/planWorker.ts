/**
 * Entry of `dist/planWorker.js`: a worker thread that reads a folder's plan graph (`loadPlan`) so the extension host's
 * event loop never waits for thousands of task files to be read and parsed (see {@link PlanLoader}). Messages in:
 * `{ id, folder }`; out: `{ id, plan }` or `{ id, error }`.
 */
import { parentPort } from 'node:worker_threads';
import { loadPlan } from '../core/sources/plan';

parentPort?.on('message', (msg: { id: number; folder: string }) => {
  loadPlan(msg.folder).then(
    (plan) => parentPort?.postMessage({ id: msg.id, plan }),
    (err: unknown) => parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
