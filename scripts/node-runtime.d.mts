export const RUNTIMES_DIR: string;
export function platformPackage(platform?: string, arch?: string): string;
export function parseLine(text: string | number): number;
export function compareVersions(a: string, b: string): number;
export function newestVersion(versions: string | string[]): string | null;
export function nodeRuntime(line: number | string, options?: { log?: (line: string) => void }): Promise<{ line: number; version: string; path: string; fetched: boolean }>;
