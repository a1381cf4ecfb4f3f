// `agent-gateway demo-agent [--port 8081]`: run the reference agent runner.
import type { Command } from 'commander';
import { startDemoAgent } from '../demo-agent/demo-agent.js';

export function registerDemoAgentCommand(program: Command): void {
  program
    .command('demo-agent')
    .description('run the reference agent runner (POST /api/v1/chat and /api/v1/chat/stream)')
    .option('--port <port>', 'port to listen on', '8081')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--token-interval <ms>', 'delay between streamed tokens, in ms', '60')
    .option('--config <path>', 'accepted for symmetry with the other commands; unused')
    .action(async (options: { port: string; host: string; tokenInterval: string }) => {
      const port = Number(options.port);
      const server = await startDemoAgent({ port, host: options.host, tokenIntervalMs: Number(options.tokenInterval) });
      process.stdout.write(`demo agent listening on http://${options.host}:${port}/api/v1\n`);
      const stop = (): void => {
        server.close(() => process.exit(0));
        server.closeAllConnections();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
}
