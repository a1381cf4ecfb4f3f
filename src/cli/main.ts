#!/usr/bin/env node
// The `agent-gateway` bin: one sub-command per file (docs/design.md, "Commands").
// First, before any other module is loaded: refuse an unsupported Node.js in one line.
import '../../scripts/node-guard.mjs';
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAuditCommand } from './audit.js';
import { TOP_LEVEL_EXAMPLES, markRequiredOptions } from './cli-help.js';
import { registerConfigCommand } from './config-command.js';
import { registerDemoAgentCommand } from './demo-agent-command.js';
import { registerEventsCommand } from './events-command.js';
import { registerKeysCommand } from './keys.js';
import { registerServeCommand } from './serve-command.js';
import { registerUsageCommand } from './usage-command.js';
import { unknownOptionsFirst } from './unknown-options-first.js';

/** src/cli/ and dist/cli/ both sit two levels below the package root. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = markRequiredOptions(new Command('agent-gateway').description('API gateway for conversational agent runners').version(version).showHelpAfterError());
program.addHelpText('after', TOP_LEVEL_EXAMPLES);
registerServeCommand(program);
registerKeysCommand(program);
registerConfigCommand(program);
registerAuditCommand(program);
registerUsageCommand(program);
registerEventsCommand(program);
registerDemoAgentCommand(program);
unknownOptionsFirst(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`agent-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
