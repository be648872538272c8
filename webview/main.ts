/**
 * The dashboard page's entry: validates every message from the host with the protocol's schema (anything else
 * is refused, counted in `body[data-refused]` and logged to the console), hands the rest to the
 * `<ralph-dashboard>` element, and tells the host it is ready.
 */
import { parseHostMessage, PROTOCOL_VERSION } from '../src/protocol/dashboard';
import type { RalphDashboard } from './components/dashboard';
import './components/dashboard';
import { postToHost } from './vscodeApi';

let refused = 0;
const app =
  document.querySelector<RalphDashboard>('ralph-dashboard') ??
  document.body.appendChild(document.createElement('ralph-dashboard') as RalphDashboard);

window.addEventListener('message', (ev: MessageEvent<unknown>) => {
  const parsed = parseHostMessage(ev.data);
  if (!parsed.ok) {
    refused++;
    document.body.dataset.refused = String(refused);
    console.warn(`[ralph dashboard] ${parsed.error}`);
    return;
  }
  app.receive(parsed.message);
});

postToHost({ type: 'ready', v: PROTOCOL_VERSION });
