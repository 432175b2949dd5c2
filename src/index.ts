/** Ratchet's public API: the capability modules' doors. */
export { ErrorCode, RatchetError, exitStatusFor } from "./core/index.js";
export { Ledger, showPlan, renderPlan, runStep, applyOp } from "./ledger/index.js";
export { SqliteStore, BlobStore, initWorkspace, resolveWorkspace } from "./store/index.js";
export { main } from "./cli/main.js";
