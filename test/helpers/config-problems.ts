// Config tests: what parseConfigText refuses a text for (its problems), or a failure when it
// accepts it; and the smallest config the loader takes.
import { ConfigError, parseConfigText } from '../../src/config/load-config.js';

export const MINIMAL_CONFIG = 'agents:\n  support:\n    upstream: http://127.0.0.1:8081/api/v1\n';

export function configProblems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfigText(text, 'test.yaml', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the config to be refused');
}
