import type { Command } from 'commander';
import { buildDoctorReport, formatDoctorReport } from '../core/doctor/report';
import { trustOverride } from '../core/trust/trustDecision';
import { resolveFolder } from './folder';
import { writeOut } from './terminalOut';

/** `ralph doctor [--json] [--cwd DIR]`: task sources, agent CLIs and problems. Exit 0 when ready, else 1. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('Report the Ralph task sources of a folder, the agent CLIs on PATH and any file problems')
    .option(
      '--json',
      'print the report as JSON: {folder, sources[], agents[{name,path,version}], problems[{file,line,column,message}], trust{state,allowed,hash,lines,diff,summary}, untrustedAgentPaths[], containment{kind,mode,detail}, protection{kind,detail}, ok}',
    )
    .option(
      '--trust',
      'run --version on the agent paths of an untrusted workspace configuration (RALPH_TRUST=1 does the same)',
    )
    .action(async (opts: { json?: boolean; trust?: boolean }, cmd: Command) => {
      const report = await buildDoctorReport(resolveFolder(cmd), { trustOverride: trustOverride(opts.trust) });
      writeOut(opts.json ? JSON.stringify(report, null, 2) + '\n' : formatDoctorReport(report));
      process.exitCode = report.ok ? 0 : 1;
    });
}
