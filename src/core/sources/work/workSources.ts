import { readChecklists } from '../checklist/checklist';
import { readFlowWorkspace } from '../flowNext/readFlow';
import { readQuantum } from '../quantum/readQuantum';
import { ChecklistSource } from './checklistSource';
import { FlowSource } from './flowSource';
import { QuantumSource } from './quantumSource';
import type { WorkSource, WorkSourceOptions } from './types';

/*
 * The task sources the lane works on, one class per kind under work/ (quantumSource.ts, flowSource.ts,
 * checklistSource.ts; what they share: work/types.ts, work/otherKinds.ts).
 */

export { isClaimBaseline, type ClaimBaseline } from '../../model/claimBaseline';
export { checklistAt, ChecklistSource } from './checklistSource';
export { FlowSource } from './flowSource';
export { QuantumSource } from './quantumSource';
export * from './types';

/** The task sources a folder offers the engine, in the order `ralph run` picks by default. */
export function availableSources(o: WorkSourceOptions): WorkSource[] {
  const out: WorkSource[] = [];
  if (readFlowWorkspace(o.folder, o.env)) out.push(new FlowSource(o));
  if (readQuantum(o.folder)) out.push(new QuantumSource(o));
  for (const c of readChecklists(o.folder)) out.push(new ChecklistSource(o, c.path));
  return out;
}
