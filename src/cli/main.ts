#!/usr/bin/env node
// The `agent-gateway` bin: one sub-command per file (docs/design.md, "Commands").
import { Command } from 'commander';
import { registerAuditCommand } from './audit.js';
import { registerConfigCommand } from './config-command.js';
import { registerDemoAgentCommand } from './demo-agent-command.js';
import { registerKeysCommand } from './keys.js';
import { registerServeCommand } from './serve-command.js';

const program = new Command('agent-gateway').description('API gateway for conversational agent runners').showHelpAfterError();
registerServeCommand(program);
registerKeysCommand(program);
registerConfigCommand(program);
registerAuditCommand(program);
registerDemoAgentCommand(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`agent-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
