// Redis's MONITOR on a plain socket, for tests that count the commands a gateway sends.
// ioredis's own monitor() marks its connection as monitoring in a promise callback after the
// `+OK`: a monitor line that arrives in the same read as the `+OK` (another client's command at
// that instant — a loaded machine makes it likely) is then parsed as the reply to a command it
// never sent, and ioredis fails with "Command queue state error". Here the `+OK` is awaited
// and every line after it is a monitor line, whatever arrives with it.
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';

export interface RedisMonitor {
  /** (time, args, source — "ip:port" or "lua" —, database), as ioredis's monitor event gives them. */
  on(event: 'monitor', listener: (time: string, args: string[], source: string, database: string) => void): this;
  disconnect(): void;
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '\\': '\\', '"': '"' };

/** The quoted arguments of a monitor line (`"set" "k" "v\x00"`), unescaped as Redis escapes them (sdscatrepr). */
export function monitorArguments(text: string): string[] {
  const args: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') {
      i += 1;
      continue;
    }
    let value = '';
    i += 1;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\' && text[i + 1] === 'x') {
        value += String.fromCharCode(parseInt(text.slice(i + 2, i + 4), 16));
        i += 4;
      } else if (text[i] === '\\') {
        value += ESCAPES[text[i + 1]!] ?? text[i + 1]!;
        i += 2;
      } else {
        value += text[i];
        i += 1;
      }
    }
    args.push(value);
    i += 1;
  }
  return args;
}

class SocketMonitor extends EventEmitter implements RedisMonitor {
  private buffered = '';
  private answered = false;
  /** Settles when Redis answered MONITOR: `+OK`, or anything else (refused). */
  readonly ready: Promise<void>;

  constructor(private readonly socket: Socket) {
    super();
    let settle!: (error?: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.read(chunk, settle));
    socket.on('error', (error) => settle(error));
    socket.on('close', () => settle(new Error('the MONITOR connection closed')));
  }

  private read(chunk: string, settle: (error?: Error) => void): void {
    this.buffered += chunk;
    let end: number;
    while ((end = this.buffered.indexOf('\r\n')) !== -1) {
      const line = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 2);
      if (!this.answered) {
        this.answered = true;
        settle(line === '+OK' ? undefined : new Error(`MONITOR was answered ${JSON.stringify(line.slice(0, 100))}`));
        continue;
      }
      // `+1796662268.591831 [0 127.0.0.1:46788] "info"`
      const match = /^\+(\d+\.\d+) \[(\d+) ([^\]]+)\] (.*)$/.exec(line);
      if (match !== null) this.emit('monitor', match[1]!, monitorArguments(match[4]!), match[3]!, match[2]!);
    }
  }

  disconnect(): void {
    this.socket.destroy();
  }
}

/** A MONITOR connection to `url` (redis://host:port), resolved once Redis answered `+OK`; every line after it is a monitor line. */
export async function startMonitor(url: string): Promise<RedisMonitor> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port || 6379) });
  const monitor = new SocketMonitor(socket);
  socket.write('MONITOR\r\n');
  try {
    await monitor.ready;
  } catch (error) {
    socket.destroy();
    throw error;
  }
  return monitor;
}
