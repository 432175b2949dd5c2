/**
 * `provenance/nodes/`: the node source of registered projects — Python and JavaScript/TypeScript
 * symbols with rename-stable `nk_…` keys, analysis runs attributed to plans and steps. Readers use
 * the `NodeSource` contract (`../types.ts`) through {@link nodeSourceFor}.
 */
import type { Store } from "../../store/index.js";
import { type NodeSourceOptions, StoreNodeSource } from "./source.js";
import { SqlNodeStore } from "./store.js";

export { type AnalysedNode, analyse, factsOf } from "./analyze.js";
export { languageOf, moduleName } from "./facts.js";
export { baselineAtPublish, refreshAtReviewStart } from "./hooks.js";
export { type MatchEvent, matchRun, mintKey, NodeEventType } from "./match.js";
export {
  BASELINE_TRIGGER,
  FILE_LINE,
  type NodeSourceOptions,
  type RefreshReport,
  StoreNodeSource,
} from "./source.js";
export { type NewRun, type NodeStore, SqlNodeStore } from "./store.js";

/** The node source over `store`'s database (SQLite or PostgreSQL). */
export function nodeSourceFor(store: Store, opts: NodeSourceOptions = {}): StoreNodeSource {
  return new StoreNodeSource(new SqlNodeStore(store), store, opts);
}
