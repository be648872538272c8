import * as path from 'node:path';

/**
 * A function giving the path of `p` relative to `folder` with `/` separators: what
 * `path.relative(folder, p).split(path.sep).join('/')` gives, but without `path.relative`'s two `resolve` calls
 * for the common case (the source readers call it once per file, ~6,300 times per `ralph status` on a
 * 5,000-task plan). The shortcut applies only when `folder` is an absolute, normalised path and `p` is a
 * normalised path under it (what `path.join(folder, …)` builds); anything else goes through `path.relative`.
 */
export function relativeTo(folder: string): (p: string) => string {
  const slow = (p: string) => path.relative(folder, p).split(path.sep).join('/');
  if (!path.isAbsolute(folder) || path.resolve(folder) !== folder) return slow;
  const prefix = folder.endsWith(path.sep) ? folder : folder + path.sep;
  // A segment that `path.normalize` would change: empty (`//`, a trailing `/`), `.` or `..`. Testing for one costs a
  // fraction of normalising the path.
  const unnormal = path.sep === '/' ? /\/\.{0,2}(?:\/|$)/ : undefined;
  return (p) => {
    if (!p.startsWith(prefix) || p.length === prefix.length) return slow(p);
    if (unnormal ? unnormal.test(p) : path.normalize(p) !== p) return slow(p);
    const rest = p.slice(prefix.length);
    return path.sep === '/' ? rest : rest.split(path.sep).join('/');
  };
}
