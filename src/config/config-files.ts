// The files a config names and reads at start (TLS PEMs of the listener, of HTTPS runners and of
// Redis): do they exist and parse? `config check` asks this beside the schema, on the document
// as written, so a missing certificate is reported with the other problems instead of at the
// first start (or the first reload) that needs it.
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { asMapping } from './schema-primitives.js';

type PemKind = 'certificate' | 'certificates' | 'key';

interface NamedFile {
  /** Its config path, e.g. listen.tls.cert. */
  where: string;
  file: string;
  kind: PemKind;
}

/** The TLS blocks of a config document and where each is. */
function tlsBlocks(document: Record<string, unknown>): { where: string; tls: Record<string, unknown> }[] {
  const blocks: { where: string; tls: Record<string, unknown> }[] = [];
  const add = (where: string, value: unknown) => {
    const tls = asMapping(value);
    if (tls) blocks.push({ where, tls });
  };
  add('listen.tls', asMapping(document.listen)?.tls);
  add('redis.tls', asMapping(document.redis)?.tls);
  for (const [id, agent] of Object.entries(asMapping(document.agents) ?? {})) add(`agents.${id}.tls`, asMapping(agent)?.tls);
  return blocks;
}

const FIELDS: Record<string, PemKind> = { cert: 'certificate', key: 'key', ca: 'certificates' };

/** The PEM files a config document names. */
export function namedFiles(document: unknown): NamedFile[] {
  const root = asMapping(document);
  if (!root) return [];
  return tlsBlocks(root).flatMap(({ where, tls }) =>
    Object.entries(FIELDS)
      .filter(([field]) => typeof tls[field] === 'string' && tls[field] !== '')
      .map(([field, kind]) => ({ where: `${where}.${field}`, file: tls[field] as string, kind })),
  );
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** What is wrong with the PEM text, or undefined; for a key, the parsed key too. */
function pemProblem(text: string, kind: PemKind): { problem?: string; key?: KeyObject; certificate?: X509Certificate } {
  try {
    if (kind === 'key') return { key: createPrivateKey(text) };
    const blocks = text.match(PEM_CERTIFICATE) ?? [];
    if (blocks.length === 0) return { problem: 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)' };
    const certificates = blocks.map((block) => new X509Certificate(block));
    return { certificate: certificates[0] };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { problem: kind === 'key' ? `is not a readable PEM private key (${reason}; an encrypted key cannot be used)` : `holds a certificate that does not parse (${reason})` };
  }
}

/**
 * One line per named file that is missing, unreadable or not the PEM it should be, and per
 * certificate whose key (beside it in the same block) does not match it. Relative paths are
 * read from the working directory, as the gateway reads them.
 */
export async function configFileProblems(document: unknown): Promise<string[]> {
  const problems: string[] = [];
  const parsed = new Map<string, { key?: KeyObject; certificate?: X509Certificate }>();
  for (const named of namedFiles(document)) {
    let text: string;
    try {
      text = await readFile(named.file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      problems.push(`${named.where}: cannot read ${named.file}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(error))}`);
      continue;
    }
    const result = pemProblem(text, named.kind);
    if (result.problem) problems.push(`${named.where}: ${named.file} ${result.problem}`);
    else parsed.set(named.where, result);
  }
  for (const [where, { certificate }] of parsed) {
    if (!certificate || !where.endsWith('.cert')) continue;
    const key = parsed.get(`${where.slice(0, -'.cert'.length)}.key`)?.key;
    if (key && !certificate.checkPrivateKey(key)) problems.push(`${where}: the certificate does not match the private key in ${where.slice(0, -'.cert'.length)}.key`);
  }
  return problems;
}
