export interface RetainedMemory {
  /** V8 heap in use after a full collection. */
  heapUsedBytes: number;
  /** Memory of Buffers and other objects outside the V8 heap, after the same collection. */
  externalBytes: number;
}
export function inspectorUrlIn(output: string): string | undefined;
export function connectInspector(url: string, timeoutMs?: number): Promise<{ collectGarbage(): Promise<RetainedMemory>; close(): void }>;
