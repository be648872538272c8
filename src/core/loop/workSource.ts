import { readChecklists } from '../sources/checklist/checklist';
import { readFlowWorkspace } from '../sources/flowNext/readFlow';
import { readQuantum } from '../sources/quantum/readQuantum';
import { ChecklistSource } from './work/checklistSource';
import { FlowSource } from './work/flowSource';
import { QuantumSource } from './work/quantumSource';
import type { WorkSource, WorkSourceOptions } from './work/types';

/*
 * The task sources the lane works on, one class per kind under work/ (quantumSource.ts, flowSource.ts,
 * checklistSource.ts; what they share: work/types.ts, work/otherKinds.ts).
 */

export { isClaimBaseline, type ClaimBaseline } from '../model/claimBaseline';
export { checklistAt, ChecklistSource } from './work/checklistSource';
export { FlowSource } from './work/flowSource';
export { QuantumSource } from './work/quantumSource';
export * from './work/types';

/** The task sources a folder offers the engine, in the order `ralph run` picks by default. */
export function availableSources(o: WorkSourceOptions): WorkSource[] {
  const out: WorkSource[] = [];
  if (readFlowWorkspace(o.folder, o.env)) out.push(new FlowSource(o));
  if (readQuantum(o.folder)) out.push(new QuantumSource(o));
  for (const c of readChecklists(o.folder)) out.push(new ChecklistSource(o, c.path));
  return out;
}
