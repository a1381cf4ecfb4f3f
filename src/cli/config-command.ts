// `agent-gateway config check`: validate the config and say what to fix, every problem in one run:
// the schema's (unknown keys with the nearest known one), and the files it names (TLS PEMs).
import type { Command } from 'commander';
import { configFileProblems } from '../config/config-files.js';
import { ConfigError, DEFAULT_CONFIG_PATH, configProblems, parseConfigDocument, readConfigText } from '../config/load-config.js';

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('work with the gateway config file');
  config
    .command('check')
    .description('validate the config file and the files it names (TLS certificates and keys); exit 1 listing every problem')
    .option('--config <path>', 'config file', DEFAULT_CONFIG_PATH)
    .action(async (options: { config: string }) => {
      try {
        const document = parseConfigDocument(await readConfigText(options.config), options.config);
        const { config: loaded, problems } = configProblems(document);
        const all = [...problems, ...(await configFileProblems(document))];
        if (!loaded || all.length > 0) throw new ConfigError(options.config, all);
        const agents = [...loaded.agents.keys()].join(', ');
        const plans = [...loaded.plans.keys()].join(', ');
        process.stdout.write(`${options.config}: ok (agents: ${agents}; plans: ${plans}; mode: ${loaded.redis ? 'redis' : 'embedded'})\n`);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        process.stderr.write(`${error.message}\n`);
        process.exitCode = 1;
      }
    });
}
