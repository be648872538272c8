/**
 * One run at a time over a growing set of keys: a key added while nothing runs starts a run at once (with the keys
 * added in the same tick); keys added while a run is under way wait together for the next run, which takes them all.
 * The coordinator fetches the lane branches of results heard close together this way: one `git fetch` of several
 * refspecs is the six processes of one fetch (fetch, its shell, upload-pack, pack-objects, unpack-objects, the
 * connectivity `rev-list`), where a fetch per lane started each its own six beside the merge slot's `git merge`.
 */
export class CoalescedRuns<K> {
  /** The run being gathered (keys heard while an earlier one runs), not yet started. */
  private next: { keys: K[]; done: Promise<unknown> } | null = null;
  /** The newest run, started or gathered: the next one starts after it. */
  private tail: Promise<unknown> = Promise.resolve();

  /** `run`: does the work of several keys at once; its failure is each of their answers (never thrown). */
  constructor(private readonly run: (keys: readonly K[]) => Promise<unknown>) {}

  /**
   * Adds `key` to the next run; resolves when the run that took it ends: with what `run` resolved to, or with the
   * Error it threw (a value, so that a waiter can try its key alone).
   */
  add(key: K): Promise<unknown> {
    if (this.next) {
      this.next.keys.push(key);
      return this.next.done;
    }
    const gathered: { keys: K[]; done: Promise<unknown> } = { keys: [key], done: Promise.resolve() };
    this.next = gathered;
    gathered.done = this.tail
      .then(() => {
        // From here on, a key added waits for the run after this one.
        if (this.next === gathered) this.next = null;
        return this.run(gathered.keys);
      })
      .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    this.tail = gathered.done;
    return gathered.done;
  }
}
