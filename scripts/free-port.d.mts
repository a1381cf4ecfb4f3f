export function freePort(): Promise<number>;
export function refusingPort(): Promise<number>;
export function waitForPort(port: number, host?: string, timeoutMs?: number): Promise<void>;
