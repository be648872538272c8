/**
 * An end reason in words. The engine names the STOP file it honoured (`stopped by .ralph/runs/<id>/STOP`, `… while
 * paused`): a person reads "stop requested (Ralph: Stop or ralph stop)" — the file stays named in the run's log.
 * Other reasons as written. Pure.
 */
export function endReasonText(reason: string): string {
  const m = /^stopped by (?:\S*\/)?STOP( while paused)?$/.exec(reason);
  return m ? `stop requested${m[1] ?? ''} (Ralph: Stop or ralph stop)` : reason;
}
