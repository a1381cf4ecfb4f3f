// An A2A agent's card (`/.well-known/agent-card.json` on its endpoint's origin): which
// protocol version the gateway speaks to it, whether it streams, and the skills the
// dashboard shows. Fetched with a bounded size and time: a card is untrusted input, and a
// card server that never answers must not hold the gateway's start or reload.
import type { Dispatcher } from 'undici';
import { Client } from '../undici-classes.js';
import { A2A_VERSION_HEADER, type A2aVersion } from './a2a-protocol.js';

export const AGENT_CARD_PATH = '/.well-known/agent-card.json';
/** A card larger than this is refused (the body is cut off, not read to its end). */
export const MAX_CARD_BYTES = 256 * 1024;
export const CARD_TIMEOUT_MS = 5_000;
const MAX_SKILLS = 100;
const MAX_TEXT = 500;

export interface A2aSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
}

export interface A2aCard {
  name: string;
  description: string;
  version: A2aVersion;
  streaming: boolean;
  skills: A2aSkill[];
}

type Json = Record<string, unknown>;

function object(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.slice(0, MAX_TEXT) : '';
}

/**
 * The version of the first JSON-RPC interface the card declares (1.0 preferred), else a
 * 0.3 card's top-level `protocolVersion`; null when it declares neither.
 */
function versionOf(card: Json): A2aVersion | null {
  const interfaces = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces.map(object) : [];
  const jsonRpc = interfaces.filter((each) => each !== null && each.protocolBinding === 'JSONRPC').map((each) => text(each!.protocolVersion));
  if (jsonRpc.some((v) => v === '1.0' || v.startsWith('1.0.'))) return '1.0';
  if (jsonRpc.some((v) => v === '0.3' || v.startsWith('0.3.'))) return '0.3';
  const legacy = text(card.protocolVersion);
  if (interfaces.length === 0 && (legacy === '0.3' || legacy.startsWith('0.3.'))) return '0.3';
  return null;
}

/** The card's parts the gateway uses; throws with a reason a log line can carry. */
export function decodeAgentCard(body: string): A2aCard {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Error('the agent card is not JSON');
  }
  const card = object(parsed);
  if (card === null) throw new Error('the agent card is not a JSON object');
  const version = versionOf(card);
  if (version === null) throw new Error('the agent card declares no JSON-RPC interface of A2A 1.0 or 0.3');
  const skills = (Array.isArray(card.skills) ? card.skills : [])
    .slice(0, MAX_SKILLS)
    .map(object)
    .filter((skill): skill is Json => skill !== null)
    .map((skill) => ({
      id: text(skill.id),
      name: text(skill.name),
      description: text(skill.description),
      tags: (Array.isArray(skill.tags) ? skill.tags : []).slice(0, 20).map(text),
    }));
  return { name: text(card.name), description: text(card.description), version, streaming: object(card.capabilities)?.streaming === true, skills };
}

/** GETs and decodes the card of the agent whose JSON-RPC endpoint is `endpoint`. */
export async function fetchAgentCard(endpoint: string, timeoutMs = CARD_TIMEOUT_MS): Promise<A2aCard> {
  const origin = new URL(endpoint).origin;
  const client = new Client(origin, { connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no agent card within ${timeoutMs} ms`)), timeoutMs);
  try {
    const answer: Dispatcher.ResponseData = await client.request({
      method: 'GET',
      path: AGENT_CARD_PATH,
      // An SDK server that speaks both versions serves the 1.0 card to a 1.0 client.
      headers: { accept: 'application/json', [A2A_VERSION_HEADER]: '1.0' },
      signal: abort.signal,
    });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      throw new Error(`the agent card answered HTTP ${answer.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_CARD_BYTES) {
        answer.body.destroy();
        throw new Error(`the agent card is larger than ${MAX_CARD_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    return decodeAgentCard(Buffer.concat(chunks, size).toString('utf8'));
  } finally {
    clearTimeout(timer);
    void client.destroy().catch(() => undefined);
  }
}
