// A real OTLP/HTTP trace receiver for tests: a node:http server on a free loopback port that
// takes what the gateway's exporter POSTs to /v1/traces (OTLP JSON), keeps the raw bytes (to
// search for anything secret) and decodes the spans. Its behaviour can be switched: answer
// 200, answer 500, or hang (read the request, never answer).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type ReceiverMode = 'ok' | 'fail' | 'hang';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Every request body as received. */
  raw: Buffer[];
  /** Export requests received (answered or not). */
  requests: number;
  setMode(mode: ReceiverMode): void;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpKeyValue[];
  events?: { name: string; attributes?: OtlpKeyValue[] }[];
  status?: { code?: number };
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(value: OtlpAnyValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return '';
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** Decodes one OTLP JSON export request into spans. */
export function decodeOtlpJson(body: Buffer): ReceivedSpan[] {
  const parsed = JSON.parse(body.toString('utf8')) as OtlpExport;
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of parsed.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
          statusCode: span.status?.code ?? 0,
          resource,
        });
      }
    }
  }
  return spans;
}

export async function startOtlpReceiver(initial: ReceiverMode = 'ok'): Promise<OtlpReceiver> {
  let mode = initial;
  const spans: ReceivedSpan[] = [];
  const raw: Buffer[] = [];
  const sockets = new Set<Socket>();
  const receiver = { requests: 0 };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    receiver.requests += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (mode === 'hang') return;
      if (mode === 'fail') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      raw.push(body);
      if (req.url === '/v1/traces') spans.push(...decodeOtlpJson(body));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    raw,
    get requests() {
      return receiver.requests;
    },
    setMode: (next) => {
      mode = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
