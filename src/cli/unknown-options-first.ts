// An unknown option is named before a missing required one: `keys create --acount acme`
// answers "unknown option '--acount' (Did you mean --account?)", not that --account is
// missing. Commander checks required options before unknown ones, so a `preSubcommand` hook
// on every command with subcommands looks at the leaf command's flags first. Suggestions use
// the config's own nearest-name rule (src/config/config-keys.ts).
import type { Command } from 'commander';
import { nearestKey } from '../config/config-keys.js';

/** Installs the check on `command` and every command below it that has subcommands. */
export function unknownOptionsFirst(command: Command): void {
  if (command.commands.length === 0) return;
  command.hook('preSubcommand', (parent, sub) => refuseUnknownOption(parent, sub));
  for (const sub of command.commands) unknownOptionsFirst(sub);
}

/** The long flags `command` takes: its own, its ancestors', and help. */
function longFlags(command: Command): string[] {
  const flags = ['--help'];
  for (let at: Command | null = command; at !== null; at = at.parent) {
    for (const option of at.options) if (option.long !== undefined) flags.push(option.long);
  }
  return flags;
}

function refuseUnknownOption(parent: Command, sub: Command): void {
  // A command with subcommands of its own is checked by its own hook, at the leaf.
  if (sub.commands.length > 0) return;
  const known = longFlags(sub);
  // The parent's args are the subcommand's name, then what the subcommand will parse.
  for (const token of parent.args.slice(1)) {
    if (token === '--') return;
    if (!token.startsWith('--')) continue;
    const flag = token.split('=', 1)[0]!;
    if (known.includes(flag)) continue;
    const near = nearestKey(flag.slice(2), known.map((name) => name.slice(2)));
    sub.error(`error: unknown option '${flag}'${near === undefined ? '' : `\n(Did you mean --${near}?)`}`, { code: 'commander.unknownOption', exitCode: 1 });
  }
}
