// Loading data for a page: the latest answer wins (an older request finishing late is dropped).
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import type { Agent, ListAnswer, McpServer, Plan } from './types.js';

export interface Async<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /**
   * Loads again; settles once the state holds this answer (or error) or a newer one's: a
   * dialog awaits it to close only when the table shows its change. Never rejects.
   */
  reload: () => Promise<void>;
}

export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const generation = useRef(0);
  const latest = useRef<Promise<void>>(Promise.resolve());
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    // A newer load (a filter changed meanwhile) drops this answer: wait for that one instead.
    const settled: Promise<void> = load().then(
      (data) => (mine === generation.current ? setState({ data, error: undefined, loading: false }) : latest.current),
      (error: Error) => (mine === generation.current ? setState((s) => ({ data: s.data, error, loading: false })) : latest.current),
    );
    latest.current = settled;
    return settled;
  }, deps);
  useEffect(() => void run(), [run]);
  return { ...state, reload: run };
}

/** The plans, agents and MCP servers keys may name (from the running config). */
export function useCatalog(): Async<{ plans: Plan[]; agents: Agent[]; mcpServers: McpServer[] }> {
  return useAsync(async () => {
    const [plans, agents, mcpServers] = await Promise.all([
      api.get<ListAnswer<Plan>>('/admin/v1/plans'),
      api.get<ListAnswer<Agent>>('/admin/v1/agents'),
      api.get<ListAnswer<McpServer>>('/admin/v1/mcp/servers'),
    ]);
    return { plans: plans.data, agents: agents.data, mcpServers: mcpServers.data };
  }, []);
}

/** `value` once it has stopped changing for `delayMs` (typing in a filter box). */
export function useDebounced<T>(value: T, delayMs: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), delayMs);
    return () => clearTimeout(timer);
  }, [value, delayMs]);
  return settled;
}

/**
 * Calls `refresh` every `intervalMs` while the page is visible. A hidden tab (another tab in
 * front, a minimised window) makes no requests; when it is shown again after an interval or
 * more, it refreshes at once and then keeps the interval.
 */
export function useAutoRefresh(intervalMs: number, refresh: () => void): void {
  const latest = useRef(refresh);
  latest.current = refresh;
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    let last = Date.now();
    const tick = () => {
      last = Date.now();
      latest.current();
    };
    const start = () => {
      timer ??= setInterval(tick, intervalMs);
    };
    const stop = () => {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    };
    const onVisibility = () => {
      if (document.visibilityState === 'hidden') return stop();
      if (Date.now() - last >= intervalMs) tick();
      start();
    };
    if (document.visibilityState !== 'hidden') start();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stop();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [intervalMs]);
}
