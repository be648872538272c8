import type { Command } from 'commander';
import { buildDoctorReport, formatDoctorReport } from '../core/doctor/report';
import { resolveFolder } from './folder';

/** `ralph doctor [--json] [--cwd DIR]`: task sources, agent CLIs and problems. Exit 0 when ready, else 1. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('Report the Ralph task sources of a folder, the agent CLIs on PATH and any file problems')
    .option('--json', 'print the report as JSON: {folder, sources[], agents[{name,path,version}], problems[{file,line,column,message}], ok}')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const report = await buildDoctorReport(resolveFolder(cmd));
      process.stdout.write(opts.json ? JSON.stringify(report, null, 2) + '\n' : formatDoctorReport(report));
      process.exitCode = report.ok ? 0 : 1;
    });
}
