export interface EngineRangePart {
  op: '^' | '>=';
  major: number;
  minor: number;
  patch: number;
}
export function parseEngineRange(range: string): EngineRangePart[];
export function nodeVersionSatisfies(version: string, range: string): boolean;
export function describeEngineRange(range: string): string;
export function unsupportedNodeMessage(version: string, range: string): string | null;
export const RECOMMENDED_NODE_LINE: number;
