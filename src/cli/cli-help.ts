// How the CLI's help reads (`agent-gateway … --help`): required options say so, and the
// top-level help ends with examples a new user can paste.
import { Help, type Command } from 'commander';

const defaultHelp = new Help();

/** Every command's help marks mandatory options "(required)"; subcommands added later inherit it. */
export function markRequiredOptions(program: Command): Command {
  return program.configureHelp({
    optionDescription: (option) => {
      const text = defaultHelp.optionDescription(option);
      return option.mandatory ? `(required) ${text}` : text;
    },
  });
}

export const TOP_LEVEL_EXAMPLES = `
Examples (from a checkout, as npm start runs it; config/gateway.yaml unless --config):
  $ npm start                                          the gateway, the demo agent and a demo key
  $ node bin/agent-gateway.mjs keys create --account acme --plan pro --agent demo --name "acme prod"
  $ node bin/agent-gateway.mjs config check --config config/gateway.yaml
  $ node bin/agent-gateway.mjs usage --by account --since 7d
  $ node bin/agent-gateway.mjs events list --state failed
Each command has its own help: node bin/agent-gateway.mjs keys create --help. Docs: README.md and docs/.
`;
