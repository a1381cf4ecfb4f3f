// A raw SSE client over node:http that timestamps every chunk and event as it arrives.
import { request, type IncomingHttpHeaders, type ClientRequest } from 'node:http';

export interface ReceivedEvent {
  name: string;
  data: string;
  atMs: number;
}

export interface SseResponse {
  status: number;
  headers: IncomingHttpHeaders;
  headersAtMs: number;
  startedAtMs: number;
  /** Every chunk as received, with its arrival time. */
  chunks: { text: string; atMs: number }[];
  events: ReceivedEvent[];
  /** Resolves when the response ends (or the socket closes). */
  ended: Promise<void>;
  text(): string;
  abort(): void;
  request: ClientRequest;
}

export function openSse(url: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<SseResponse> {
  const startedAtMs = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: { text: string; atMs: number }[] = [];
      const events: ReceivedEvent[] = [];
      let buffer = '';
      const ended = new Promise<void>((done) => {
        res.on('end', done);
        res.on('close', done);
        res.on('error', () => done());
      });
      res.on('data', (chunk: Buffer) => {
        const atMs = performance.now();
        const text = chunk.toString('utf8');
        chunks.push({ text, atMs });
        buffer += text;
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          let name = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) name = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (data.length > 0 || name !== 'message') events.push({ name, data: data.join('\n'), atMs });
        }
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        headersAtMs: performance.now(),
        startedAtMs,
        chunks,
        events,
        ended,
        text: () => chunks.map((c) => c.text).join(''),
        abort: () => req.destroy(),
        request: req,
      });
    });
    req.on('error', reject);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}
