// The OpenAPI documents lint clean, name every error type of the one registry, and the
// answer checker the integration tests use refuses what the documents do not allow.
import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ERROR_TYPES } from '../../../src/errors.js';
import { OpenApiCheck } from '../../helpers/openapi-check.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const load = (name: string) => parseYaml(readFileSync(`openapi/${name}.yaml`, 'utf8')) as any;

const ADMIN_ONLY = ['missing_admin_token', 'invalid_admin_token', 'insufficient_role', 'csrf_token_invalid', 'key_not_found'];

function errorTypes(document: unknown): string[] {
  return (document as { components: { schemas: { Error: { properties: { error: { properties: { type: { enum: string[] } } } } } } } }).components.schemas.Error.properties.error.properties.type.enum;
}

describe('OpenAPI documents', () => {
  it.each(['agent-chat', 'admin'])('%s.yaml is a valid OpenAPI 3.1 document', async (name) => {
    const result = await validate(load(name));
    expect(result).toMatchObject({ valid: true, specification: 'OpenAPI' });
    expect(load(name).openapi).toBe('3.1.0');
  });

  it('the linter refuses a broken document (so the check above can fail)', async () => {
    const broken = load('admin') as Record<string, Record<string, unknown>>;
    broken.paths!['/admin/v1/plans'] = { get: { responses: { '200': { $ref: '#/components/responses/Nowhere' } } } };
    const result = await validate(broken as never).catch((error: Error) => ({ valid: false, error: error.message }));
    expect(result.valid).toBe(false);
  });

  it('every public error type is in agent-chat.yaml, every admin error type in admin.yaml', () => {
    const publicTypes = Object.keys(ERROR_TYPES).filter((t) => !ADMIN_ONLY.includes(t));
    expect(errorTypes(load('agent-chat')).sort()).toEqual(publicTypes.sort());
    for (const type of ADMIN_ONLY) expect(errorTypes(load('admin'))).toContain(type);
    for (const type of errorTypes(load('admin'))) expect(Object.keys(ERROR_TYPES)).toContain(type);
  });

  it('the answer checker refuses an undocumented status, an undocumented field and a wrong content type', () => {
    const check = new OpenApiCheck('admin');
    const json = (status: number, body: unknown) => ({ status, headers: new Headers({ 'content-type': 'application/json' }), body, text: JSON.stringify(body) });
    const plans = { data: [{ name: 'starter', windows: [{ name: 'minute', requests: 60, per: '1m' }] }] };
    expect(() => check.check('GET', '/admin/v1/plans', json(200, plans))).not.toThrow();
    expect(() => check.check('GET', '/admin/v1/plans', json(418, plans))).toThrow(/does not document status 418/);
    expect(() => check.check('GET', '/admin/v1/plans', json(200, { ...plans, extra: 1 }))).toThrow(/additional properties/);
    expect(() => check.check('GET', '/admin/v1/plans', { ...json(200, plans), headers: new Headers({ 'content-type': 'text/plain' }) })).toThrow(/content type/);
    expect(() => check.check('DELETE', '/admin/v1/plans', json(200, plans))).toThrow(/documents no DELETE/);
    const error = { error: { type: 'key_not_found', message: 'm', request_id: 'r' } };
    expect(() => check.check('GET', '/admin/v1/keys/key_0000000000000000', json(404, error))).not.toThrow();
    expect(() => check.check('GET', '/admin/v1/keys/key_0000000000000000', json(404, { error: { ...error.error, type: 'nope' } }))).toThrow(/allowed values/);
  });
});
