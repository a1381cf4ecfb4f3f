// nginx proxy_pass in front of the stub, when nginx is installed: the reference a native
// reverse proxy sets. The bench writes its own config (one worker, like the single gateway
// process; upstream keep-alive; proxy_buffering off as the gateway streams unbuffered) and
// runs it in the foreground under its own prefix, so it touches nothing in /etc or /var.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitForPort } from '../../scripts/free-port.mjs';
import { childPids } from './proc-stats.mjs';
import { spawnProcess } from './processes.mjs';

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx', '/usr/bin/nginx'];

function run(command, args) {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 10_000 }, (error, stdout, stderr) => resolve({ ok: !error, text: `${stdout}${stderr}` }));
  });
}

/** { path, version } of an installed nginx, or null. */
export async function findNginx() {
  for (const path of CANDIDATES) {
    if (!existsSync(path)) continue;
    const out = await run(path, ['-v']);
    const version = /nginx\/(\S+)/.exec(out.text)?.[1];
    if (version) return { path, version };
  }
  return null;
}

export async function startNginx({ nginx, tmpDir, upstreamPort, workerFdLimit }) {
  const prefix = join(tmpDir, 'nginx');
  mkdirSync(join(prefix, 'temp'), { recursive: true });
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  const temp = (name) => join(prefix, 'temp', name);
  writeFileSync(
    conf,
    `# Written by bench/run.mjs.
worker_processes 1;
worker_rlimit_nofile ${workerFdLimit};
daemon off;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections ${Math.max(1024, workerFdLimit - 100)}; }
http {
  # Logged like the gateway logs (one line per request to a file, written in batches).
  access_log ${join(prefix, 'access.log')} combined buffer=64k flush=1s;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  # Keep-alive as long as the gateway's (65 s), and never closed after N requests: the
  # load generators' connections live the whole run, as they do against the gateway.
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  upstream stub {
    server 127.0.0.1:${upstreamPort};
    keepalive 512;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`,
  );
  const test = await run(nginx.path, ['-t', '-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf]);
  if (!test.ok) throw new Error(`nginx -t refused the bench config:\n${test.text}`);
  let masterPid = null;
  const handle = await spawnProcess({
    name: 'nginx',
    command: nginx.path,
    args: ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', conf],
    logFile: join(prefix, 'stdout.log'),
    extraPids: () => (masterPid ? childPids(masterPid) : []),
    stopGraceMs: 5_000,
  });
  masterPid = handle.pid;
  await waitForPort(port);
  return {
    handle,
    url: `http://127.0.0.1:${port}`,
    /** Master and workers: the CPU of the whole nginx. */
    pids: () => [masterPid, ...childPids(masterPid)],
  };
}
