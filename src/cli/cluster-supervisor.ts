// `serve --workers N`: the primary's N workers. Forks them, knows which listen (each says so
// over IPC, with what the primary needs of its config), replaces the ones that die, signals
// and stops them. It reads no config: a worker that cannot start says why (start-failed) and
// the primary's start fails with that text (decision 0112).
import cluster, { type Worker } from 'node:cluster';
import { decodeStartFailed, decodeWorkerListening, decodeWorkerSettings, type WorkerListening, type WorkerSettings } from './cluster-messages.js';
import { WORKER_INDEX_ENV } from './cluster-workers.js';
import { workerEnvironment, workerExecArgv } from './worker-runtime.js';

/** A replaced worker waits this long before it is forked again, so a crash loop cannot spin. */
const RESPAWN_DELAY_MS = 1_000;

/** A worker could not start; `message` is what the operator reads (a refused config, a port in use). */
export class WorkerStartError extends Error {}

export interface SupervisorEvents {
  /** A worker listens (at start, and each replacement). */
  listening(index: number, worker: Worker, listening: WorkerListening): void;
  /** A worker applied a reloaded config. */
  settings(settings: WorkerSettings): void;
  /** A replacement worker could not start: why, as it said. */
  replacementRefused(text: string): void;
  /** A worker died after the instance had started; it is forked again. */
  died(index: number, pid: number | undefined, code: number | null, signal: string | null): void;
}

export class WorkerSupervisor {
  private readonly byIndex = new Map<number, Worker>();
  private readonly listening = new Set<Worker>();
  private stopping = false;
  private everListened = false;

  constructor(
    readonly count: number,
    private readonly events: SupervisorEvents,
  ) {}

  get listeningCount(): number {
    return this.listening.size;
  }

  get liveCount(): number {
    return this.byIndex.size;
  }

  /** The workers that listen now (those asked for metrics). */
  listeningWorkers(): Worker[] {
    return [...this.listening];
  }

  /** Forks every worker; resolves once all listen, rejects (WorkerStartError) if one fails first. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const failStart = (error: WorkerStartError): void => {
        // A replacement that cannot start (say, the file was since made invalid): logged, and
        // forked again after RESPAWN_DELAY_MS like any worker that dies.
        if (this.everListened) return this.events.replacementRefused(error.message);
        this.everListened = true; // settles once: later exits are the stop's
        reject(error);
      };
      cluster.on('message', (worker, message: unknown) => {
        // Read even when its exit was seen first (see 'exit' below).
        const failed = decodeStartFailed(message);
        if (failed) return failStart(new WorkerStartError(failed.text));
        const index = this.indexOf(worker);
        if (index === undefined) return;
        const listening = decodeWorkerListening(message);
        if (listening) {
          this.listening.add(worker);
          this.events.listening(index, worker, listening);
          if (!this.everListened && this.listening.size === this.count) {
            this.everListened = true;
            resolve();
          }
          return;
        }
        const settings = decodeWorkerSettings(message);
        if (settings) this.events.settings(settings);
      });
      cluster.on('exit', (worker, code, signal) => {
        this.listening.delete(worker);
        const index = this.indexOf(worker);
        if (index === undefined) return;
        this.byIndex.delete(index);
        if (this.stopping) return;
        if (!this.everListened) {
          // Its start-failed message, if it sent one, is read before its channel closes: wait
          // for that, so the operator gets the worker's own reason rather than an exit code.
          const fail = () => failStart(new WorkerStartError(`agent-gateway: worker ${index} exited during startup (code ${code}, signal ${signal})`));
          if (worker.isConnected()) worker.once('disconnect', fail);
          else fail();
          return;
        }
        this.events.died(index, worker.process.pid, code, signal);
        setTimeout(() => {
          if (!this.stopping) this.fork(index);
        }, RESPAWN_DELAY_MS).unref();
      });
      for (let index = 1; index <= this.count; index++) this.fork(index);
    });
  }

  signalAll(signal: NodeJS.Signals): void {
    // Only workers that listen have their signal handlers in place; one still starting reads
    // the file as it starts anyway.
    for (const worker of this.listening) worker.process.kill(signal);
  }

  /** Forwards the stop signal; kills whatever is left after `deadlineMs`. True when all exited 0. */
  stop(signal: NodeJS.Signals, deadlineMs: number): Promise<boolean> {
    this.stopping = true;
    const workers = [...this.byIndex.values()];
    let clean = true;
    const exits = workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.process.exitCode !== null || worker.process.signalCode !== null) {
            clean &&= worker.process.exitCode === 0;
            resolve();
            return;
          }
          worker.process.once('exit', (code) => {
            clean &&= code === 0;
            resolve();
          });
        }),
    );
    for (const worker of workers) worker.process.kill(signal);
    const killer = setTimeout(() => {
      for (const worker of workers) if (worker.process.exitCode === null) worker.process.kill('SIGKILL');
    }, deadlineMs);
    return Promise.all(exits).then(() => {
      clearTimeout(killer);
      return clean;
    });
  }

  private fork(index: number): void {
    // Start-time settings for a process that holds streams (worker-runtime.ts).
    cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
    const worker = cluster.fork({ ...workerEnvironment(process.env), [WORKER_INDEX_ENV]: String(index) });
    this.byIndex.set(index, worker);
  }

  private indexOf(worker: Worker): number | undefined {
    for (const [index, candidate] of this.byIndex) if (candidate === worker) return index;
    return undefined;
  }
}
