// Reading files that may legitimately not exist yet (a fresh key store, an empty spool).
import { open, readFile, type FileHandle } from 'node:fs/promises';

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** Opens for reading; undefined when the file does not exist, other errors thrown. */
export async function openIfExists(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** The file as UTF-8 text; undefined when it does not exist, other errors thrown. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
