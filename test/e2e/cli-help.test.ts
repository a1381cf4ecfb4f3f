// The CLI's help as a new user reads it: an example at the top, every key command in the keys
// summary, required options marked, defaults in the units the options take (no "604800000").
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI_PATH } from '../helpers/cli.js';

// Each command's help is read once (one CLI process each), however many tests read it.
const helpTexts = new Map<string, Promise<string>>();
const help = (...command: string[]): Promise<string> => {
  const key = command.join(' ');
  if (!helpTexts.has(key)) helpTexts.set(key, promisify(execFile)(process.execPath, [CLI_PATH, ...command, '--help']).then((result) => result.stdout));
  return helpTexts.get(key)!;
};

const COMMANDS = [[], ['serve'], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'show'], ['keys', 'revoke'], ['keys', 'update'], ['keys', 'rotate'], ['config'], ['config', 'check'], ['audit'], ['audit', 'tail'], ['usage'], ['events'], ['events', 'list'], ['demo-agent']];

describe('agent-gateway --help', () => {
  it('ends the top-level help with examples that use the demo config', async () => {
    const text = await help();
    expect(text).toMatch(/\nExamples[^\n]*:\n/);
    expect(text).toContain('node bin/agent-gateway.mjs keys create --account acme --plan pro --agent demo');
  });

  it('names every keys subcommand in the keys summary, update and rotate included', async () => {
    const summary = /\n {2}keys +(.+)\n/.exec(await help())![1]!;
    const subcommands = [...(await help('keys')).matchAll(/\n {2}([a-z]+) \[options\]/g)].map((m) => m[1]!);
    expect(subcommands.sort()).toEqual(['create', 'list', 'revoke', 'rotate', 'show', 'update']);
    for (const name of subcommands) expect(summary).toContain(name);
  });

  it('marks required options and shows defaults in human units', async () => {
    const create = await help('keys', 'create');
    for (const option of ['--account <account>', '--plan <plan>', '--agent <agent>']) expect(create).toMatch(new RegExp(`${option} +\\(required\\)`));
    expect(create).not.toMatch(/--(name|json|limits)[^\n]*\(required\)/);
    expect(await help('usage')).toMatch(/--since <duration> +how far back, e\.g\. 7d or 24h \(default: 7d\)/);
    const texts = await Promise.all(COMMANDS.map((command) => help(...command)));
    for (const [i, text] of texts.entries()) {
      // A raw number of milliseconds (or bytes) as a default is not for people.
      expect(text, COMMANDS[i]!.join(' ')).not.toMatch(/default: \d{4,}/);
      expect(text, COMMANDS[i]!.join(' ')).not.toContain('(default: [])');
    }
  }, 120_000);

  it('says which required option is missing', async () => {
    const missing = await promisify(execFile)(process.execPath, [CLI_PATH, 'keys', 'create', '--account', 'a', '--plan', 'pro']).catch((error: { code: number; stderr: string }) => error);
    expect('code' in missing && missing.code).toBe(1);
    expect((missing as { stderr: string }).stderr).toContain("error: required option '--agent <agent>' not specified");
  });
});
