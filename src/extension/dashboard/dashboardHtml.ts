import { randomBytes } from 'node:crypto';

/** A fresh CSP nonce: 16 random bytes, base64 (never Math.random; webview-sample's weak spot). */
export function makeNonce(): string {
  return randomBytes(16).toString('base64');
}

/**
 * The page's HTML: a strict CSP (nothing by default; scripts only with this render's nonce; styles, fonts and
 * images only from the webview's own resource origin, which `localResourceRoots` limits to `dist/webview`), the
 * bundled css and script, and no inline script or style.
 */
export function dashboardHtml(o: { cspSource: string; nonce: string; scriptUri: string; styleUri: string }): string {
  const csp = [
    "default-src 'none'",
    `img-src ${o.cspSource} data:`,
    `style-src ${o.cspSource}`,
    `font-src ${o.cspSource}`,
    `script-src 'nonce-${o.nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${o.styleUri}">
<title>Ralph Dashboard</title>
</head>
<body>
<ralph-dashboard></ralph-dashboard>
<script nonce="${o.nonce}" src="${o.scriptUri}"></script>
</body>
</html>`;
}
