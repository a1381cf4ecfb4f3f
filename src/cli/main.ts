#!/usr/bin/env node
// The `agent-gateway` bin: one sub-command per file (docs/design.md, "Commands"). Each
// command's options are a small file in commands/; its implementation is imported only when it
// runs, so a command (and `serve --workers`'s primary) loads only what it uses (decision 0112).
// First, before any other module is loaded: refuse an unsupported Node.js in one line.
import '../../scripts/node-guard.mjs';
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { TOP_LEVEL_EXAMPLES, markRequiredOptions } from './cli-help.js';
import { registerAuditCommand } from './commands/audit.js';
import { registerConfigCommand } from './commands/config.js';
import { registerDemoAgentCommand } from './commands/demo-agent.js';
import { registerEventsCommand } from './commands/events.js';
import { registerKeysCommand } from './commands/keys.js';
import { registerServeCommand } from './commands/serve.js';
import { registerUsageCommand } from './commands/usage.js';
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
