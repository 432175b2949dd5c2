/** A counting semaphore whose waiters can give up (an AbortSignal). FIFO: no caller starves. */
export class Semaphore {
  #free: number;
  readonly #waiters: { grant: () => void; cancel: (reason: unknown) => void }[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`semaphore size must be ≥ 1 (got ${size})`);
    this.#free = size;
  }

  /** Slots in use. */
  get inUse(): number {
    return this.size - this.#free;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Takes a slot, waiting for one if none is free. Resolves to the release function (call it
   * exactly once; later calls do nothing). Rejects with `signal.reason` when `signal` aborts first.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#releaser());
        },
        cancel: reject,
      };
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next.grant();
      else this.#free++;
    };
  }
}
