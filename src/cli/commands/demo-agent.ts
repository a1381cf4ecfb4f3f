// `agent-gateway demo-agent`: its options; the action (../demo-agent-command.ts) is imported when it runs.
import type { Command } from 'commander';
import { lazyAction } from './lazy-action.js';

export function registerDemoAgentCommand(program: Command): void {
  program
    .command('demo-agent')
    .description('run the reference agent runner (POST /api/v1/chat and /api/v1/chat/stream)')
    .option('--port <port>', 'port to listen on', '8081')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--token-interval <ms>', 'delay between streamed tokens, in ms', '60')
    .option('--config <path>', 'accepted for symmetry with the other commands; unused')
    .action(lazyAction(async () => (await import('../demo-agent-command.js')).demoAgentAction));
}
