#!/usr/bin/env node
// The `agent-gateway` bin: one sub-command per file (DESIGN.md 6b).
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAuditCommand } from './audit.js';
import { registerConfigCommand } from './config-command.js';
import { registerDemoAgentCommand } from './demo-agent-command.js';
import { registerKeysCommand } from './keys.js';
import { registerServeCommand } from './serve-command.js';
import { registerUsageCommand } from './usage-command.js';

/** src/cli/ and dist/cli/ both sit two levels below the package root. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command('agent-gateway').description('API gateway for conversational agent runners').version(version).showHelpAfterError();
registerServeCommand(program);
registerKeysCommand(program);
registerConfigCommand(program);
registerAuditCommand(program);
registerUsageCommand(program);
registerDemoAgentCommand(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`agent-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
