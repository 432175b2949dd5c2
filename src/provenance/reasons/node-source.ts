/**
 * The one seam through which the reasons area, the headline and `why` reach a project's node
 * source: the analyser's (`nodes/`), read through the `NodeSource` contract only (types.ts). A
 * test may swap it with `useNodeSource` (e.g. a source that throws, to prove the close goes on).
 */
import type { SqliteStore } from "../../store/index.js";
import { nodeSourceFor as analyserSource } from "../nodes/index.js";
import type { NodeSource } from "../types.js";

type Factory = (store: SqliteStore) => NodeSource;
let factory: Factory = (store) => analyserSource(store);

/** The node source the reasons, headline and `why` read (the analyser's; a test may swap it). */
export function nodeSourceFor(store: SqliteStore): NodeSource {
  return factory(store);
}

/** Wires in a node source (the analyzer's, or a test's); returns a function restoring the previous one. */
export function useNodeSource(f: Factory): () => void {
  const prev = factory;
  factory = f;
  return () => {
    factory = prev;
  };
}
