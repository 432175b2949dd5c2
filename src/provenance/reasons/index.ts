/**
 * The reasons area's door: reason-slots, reason-fill, close_mode and the close writes.
 * Importing it registers the close writes on the ledger's `onPlanClosing` hook — the ledger's
 * `FLOWS` list imports the two flow definitions from here, so every process that can run a
 * ledger flow has the hook (once: modules are cached).
 */
import { onPlanClosing } from "../../ledger/core.js";
import { closeReasons } from "./close.js";

export type { CloseSummary } from "./close.js";
export { closeReasons, writeClose } from "./close.js";
export type { CloseModeLookup, CloseModeSetting } from "./close-mode.js";
export { CloseMode, loadCloseMode } from "./close-mode.js";
export type { ReasonContext } from "./context.js";
export { reasonContext } from "./context.js";
export { REASON_FILL_FLOW, type ReasonFillResult, reasonFill } from "./fill.js";
export type { Answer, FillInput } from "./fill-input.js";
export { parseFill } from "./fill-input.js";
export { nodeSourceFor, useNodeSource } from "./node-source.js";
export { REASON_SLOTS_FLOW, type ReasonSlotsInput, type ReasonSlotsResult, reasonSlots } from "./slots.js";
export type { NewInfluence, NewReason, NewTrigger, ReasonRow, ReasonStore } from "./store.js";
export { SqlReasonStore, Tier } from "./store.js";

onPlanClosing(closeReasons);
