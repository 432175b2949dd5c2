/**
 * Node built-ins loaded on first use. A short CLI write never spawns or hashes, and loading
 * `node:child_process` (with net, dgram and the stream stack behind it) or `node:crypto` costs it a
 * few milliseconds of start-up.
 */
import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/** A getter that loads the built-in `name` the first time it is called. */
export function lazyBuiltin<T>(name: `node:${string}`): () => T {
  let mod: T | undefined;
  return () => {
    mod ??= load(name) as T;
    return mod;
  };
}
