/**
 * A queue of asynchronous writes that run one after another, in the order they were queued (the run log and the
 * activity log append whole lines; two appends in flight at once could interleave or reorder them).
 *
 * Errors are never swallowed: a write's failure rejects the promise {@link WriteQueue.push} returned for it, and its
 * caller reports it (the recorder turns it into a `warning`/storage failure). The queue itself goes on with the next
 * write: one failed append does not stop later ones. {@link WriteQueue.flush} resolves when every write queued so
 * far has finished, failed or not (their failures went to their callers).
 */
export class WriteQueue {
  /** The last queued write, settled either way (never rejects). */
  private tail: Promise<void> = Promise.resolve();

  /** Queues `task` after every earlier one; resolves or rejects with `task`'s own outcome. */
  push(task: () => Promise<void>): Promise<void> {
    const run = this.tail.then(task);
    this.tail = run.then(done, done);
    return run;
  }

  /** Resolves when every write queued so far has settled. */
  flush(): Promise<void> {
    return this.tail;
  }
}

/** Marks a write settled in the queue's tail; its outcome went to the caller of {@link WriteQueue.push}. */
function done(): void {}
