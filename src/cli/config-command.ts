// `agent-gateway config check`: validate the config and say what to fix, every problem in one run:
// the schema's (unknown keys with the nearest known one), and the files it names (TLS PEMs).
// The options are src/cli/commands/config.ts.
import { configFileProblems } from '../config/config-files.js';
import { ConfigError, configProblems, parseConfigDocument, readConfigText } from '../config/load-config.js';

export async function configCheckAction(options: { config: string }): Promise<void> {
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
}
