/**
 * The one seam through which every reader of nodes — `note --node` (words), the reasons area, the
 * headline and `why` — reaches a project's node source: the analyser's (`nodes/`), read through
 * the `NodeSource` contract only (types.ts). A test may swap it with `useNodeSource` (e.g. a
 * source that throws, to prove the close goes on, or one that adds a keyless ghost node).
 */
import type { Store } from "../store/index.js";
import { nodeSourceFor as analyserSource } from "./nodes/index.js";
import type { NodeSource } from "./types.js";

type Factory = (store: Store) => NodeSource;
let factory: Factory = (store) => analyserSource(store);

/** The node source every reader uses (the analyser's; a test may swap it). */
export function nodeSourceFor(store: Store): NodeSource {
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
