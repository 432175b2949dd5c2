/** Ratchet's public API: the capability modules' doors. */

export { main } from "./cli/main.js";
export { ErrorCode, exitStatusFor, RatchetError } from "./core/index.js";
export { applyOp, Ledger, renderPlan, runStep, showPlan } from "./ledger/index.js";
export { BlobStore, initWorkspace, resolveWorkspace, SqliteStore } from "./store/index.js";
