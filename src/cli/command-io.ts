// What the read-only report commands (`usage`, `events list`) write to and how they read their
// options: one text sink pair and one exit code, replaced by tests so they never touch the
// runner's own streams or exit code.
import { InvalidArgumentError } from 'commander';

export interface TextCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  setExitCode: (code: number) => void;
}

export const processTextIo: TextCommandIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  setExitCode: (code) => void (process.exitCode = code),
};

/** A commander option parser that accepts exactly one of `allowed`. */
export function oneOf<T extends string>(allowed: readonly T[]) {
  return (value: string): T => {
    if (!(allowed as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${allowed.join(', ')}`);
    return value as T;
  };
}
