/**
 * A child the spawner started, as `supervise()` sees it (the part of `ChildProcess` it uses).
 * Events that happen before the caller attached its listeners wait for `release()`.
 */

import { EventEmitter } from "node:events";
import type { Socket } from "node:net";

/** `spawnError.code` of a run whose spawner died under it (its group is killed). */
export const SPAWNER_LOST = "ESPAWNER";

/** A child the spawner started: pid, its stdio sockets, `exit`/`error`, `kill`, `unref`. */
export class SpawnerChild extends EventEmitter {
  private held = true;
  private queued: (() => void)[] = [];
  private gone = false;
  constructor(
    readonly pid: number,
    readonly stdin: Socket | null,
    readonly stdout: Socket,
    readonly stderr: Socket,
  ) {
    super();
  }

  /** Signals the direct child (`supervise()` prefers the group). */
  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    if (this.gone) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** Its streams no longer keep the event loop alive. */
  unref(): void {
    for (const s of [this.stdin, this.stdout, this.stderr]) s?.unref();
  }

  /** Delivers what happened before the caller attached its listeners. */
  release(): void {
    this.held = false;
    for (const f of this.queued.splice(0)) f();
  }

  /** @internal the spawner reported the exit. */
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.deliver(() => {
      this.gone = true;
      this.emit("exit", code, signal);
    });
  }

  /** @internal the spawner died while this child ran: its group was killed. */
  lost(): void {
    this.deliver(() => {
      const err = Object.assign(new Error(`the spawner died while pid ${this.pid} ran`), {
        code: SPAWNER_LOST,
      });
      this.emit("error", err);
      this.gone = true;
      this.emit("exit", null, null);
    });
  }

  private deliver(f: () => void): void {
    if (this.held) this.queued.push(f);
    else f();
  }
}
