/** Quotes `s` for bash so that it is one word with exactly this value (for commands the guard and the CLI write). */
export function shellQuote(s: string): string {
  if (s !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
