// What `serve` prints when a listener cannot bind: which listener, the address, why, and the
// setting that picks its port (with the environment variable that sets it, where there is
// one), so a second `npm start` beside a running one says what to change.
import { readFile } from 'node:fs/promises';
import type { ListenError } from '../http/listen.js';

const REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another agent-gateway, such as a running npm start, or another program)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no network interface of this machine has that address',
};

/** `${NAME}` or `${NAME:-…}` in the config text: the variable the value comes from. */
function usesVariable(configText: string, name: string): boolean {
  return configText.includes(`\${${name}}`) || configText.includes(`\${${name}:-`);
}

/** The one-line explanation of a ListenError for the config at `configPath`. */
export async function describeListenFailure(error: ListenError, configPath: string): Promise<string> {
  const configText = await readFile(configPath, 'utf8').catch(() => '');
  const where = `in ${configPath}`;
  let setting: string;
  switch (error.listener) {
    case 'gateway':
      setting = `listen.port ${where}, or the PORT environment variable, which overrides it (e.g. PORT=8180)`;
      break;
    case 'admin':
      setting = `admin.port ${where}${usesVariable(configText, 'ADMIN_PORT') ? ', which reads the ADMIN_PORT environment variable (e.g. ADMIN_PORT=9190)' : ''}`;
      break;
    case 'demo agent':
      setting = `the port of agents.demo.upstream ${where}${usesVariable(configText, 'DEMO_AGENT_URL') ? ', which reads the DEMO_AGENT_URL environment variable (e.g. DEMO_AGENT_URL=http://127.0.0.1:8181/api/v1)' : ''}`;
      break;
  }
  const reason = (error.code !== undefined ? REASONS[error.code] : undefined) ?? (error.code ?? String(error.cause));
  return `the ${error.listener} listener cannot listen on ${error.host}:${error.port}: ${reason}. Stop what holds it, or choose another port: ${setting}.`;
}
