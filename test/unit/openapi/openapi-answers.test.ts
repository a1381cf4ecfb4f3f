// The shared helpers' answer check (test/helpers/openapi-answers.ts) fails a fetch whose
// answer disagrees with the OpenAPI documents — status, body schema, required header — and
// lets through what they document, including a runner's own answer passed through. A real
// HTTP server plays the gateway's listener.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAnswersFrom } from '../../helpers/openapi-answers.js';
import { RUNNER_MARKER } from '../../helpers/openapi-check.js';

let server: Server;
let base: string;
let next: { status: number; headers: Record<string, string>; body: string } = { status: 200, headers: {}, body: '' };
const stops: (() => void)[] = [];

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(next.status, next.headers);
    res.end(next.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  stops.forEach((stop) => stop());
  await new Promise((resolve) => server.close(resolve));
});

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
  next = { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
};
const envelope = { error: { type: 'internal_error', message: 'x', request_id: 'r-1' } };

describe('answers checked against the OpenAPI documents by the shared helpers', () => {
  it('admin listener: a documented answer passes; a wrong body, an undocumented status, a bad error envelope fail the fetch', async () => {
    stops.push(checkAnswersFrom(base, 'admin'));
    json(200, { data: [] });
    expect((await fetch(`${base}/admin/v1/plans`)).status).toBe(200);
    json(200, { data: 5 });
    await expect(fetch(`${base}/admin/v1/plans`)).rejects.toThrow(/does not match admin.yaml/);
    json(418, envelope);
    await expect(fetch(`${base}/admin/v1/plans`)).rejects.toThrow(/does not document status 418/);
    json(404, { error: 'nope' });
    await expect(fetch(`${base}/not/a/documented/path`)).rejects.toThrow(/does not match admin.yaml \/components\/schemas\/Error/);
    json(405, envelope, { allow: 'get, patch' });
    await expect(fetch(`${base}/admin/v1/keys/key_0000000000000000`, { method: 'DELETE' })).rejects.toThrow(/header Allow/);
    stops.pop()!();
    json(200, { data: 5 });
    expect((await fetch(`${base}/admin/v1/plans`)).status).toBe(200); // no longer registered
  });

  it('public listener: a gateway 500 must be the envelope; a runner\'s own 500 passes through with any body', async () => {
    stops.push(checkAnswersFrom(base, 'agent-chat'));
    json(500, { error: 'runner broke' });
    await expect(fetch(`${base}/agents/support/api/v1/chat`, { method: 'POST' })).rejects.toThrow(/InternalError/);
    json(500, { error: 'runner broke' }, { [RUNNER_MARKER]: 'fake' });
    expect((await fetch(`${base}/agents/support/api/v1/chat`, { method: 'POST' })).status).toBe(500);
    json(500, { error: 'runner broke' }, { [RUNNER_MARKER]: 'fake', 'x-ratelimit-limit': 'many' });
    await expect(fetch(`${base}/agents/support/api/v1/chat`, { method: 'POST' })).rejects.toThrow(/header X-RateLimit-Limit/);
    json(500, envelope);
    expect((await fetch(`${base}/agents/support/api/v1/chat`, { method: 'POST' })).status).toBe(500);
  });
});
