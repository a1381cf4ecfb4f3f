// `agent-gateway demo-agent [--port 8081]`: run the reference agent runner. The options are
// src/cli/commands/demo-agent.ts.
import { startDemoAgent } from '../demo-agent/demo-agent.js';

export async function demoAgentAction(options: { port: string; host: string; tokenInterval: string }): Promise<void> {
  const port = Number(options.port);
  const server = await startDemoAgent({ port, host: options.host, tokenIntervalMs: Number(options.tokenInterval) });
  process.stdout.write(`demo agent listening on http://${options.host}:${port}/api/v1\n`);
  const stop = (): void => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
