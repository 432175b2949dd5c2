/**
 * `provenance/nodes/`: the node source of registered projects — Python and JavaScript/TypeScript
 * symbols with rename-stable `nk_…` keys, analysis runs attributed to plans and steps. Readers use
 * the `NodeSource` contract (`../types.ts`) through {@link nodeSourceFor}.
 */
import type { Store } from "../../store/index.js";
import { sqliteOf } from "../db.js";
import { type NodeSourceOptions, SqliteNodeSource } from "./source.js";
import { SqliteNodeStore } from "./store.js";

export { type AnalysedNode, analyse, factsOf } from "./analyze.js";
export { languageOf, moduleName } from "./facts.js";
export { baselineAtPublish, refreshAtReviewStart } from "./hooks.js";
export { type MatchEvent, matchRun, mintKey, NodeEventType } from "./match.js";
export {
  BASELINE_TRIGGER,
  FILE_LINE,
  type NodeSourceOptions,
  type RefreshReport,
  SqliteNodeSource,
} from "./source.js";
export { type NewRun, type NodeStore, SqliteNodeStore } from "./store.js";

/** The node source over `store`'s database. @throws RatchetError when the store is not SQLite. */
export function nodeSourceFor(store: Store, opts: NodeSourceOptions = {}): SqliteNodeSource {
  return new SqliteNodeSource(new SqliteNodeStore(sqliteOf(store)), store, opts);
}
