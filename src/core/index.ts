export type { Clock } from "./clock.js";
export { compactStamp, iso, ManualClock, systemClock } from "./clock.js";
export type { ErrorDetails } from "./errors.js";
export {
  ErrorCode,
  exitStatusFor,
  httpStatusFor,
  isRatchetError,
  RatchetError,
  toRatchetError,
} from "./errors.js";
export { findAbove } from "./find-above.js";
export type { HostPolicy } from "./hosts.js";
export { bindHostName, hostAllowed, LOOPBACK_HOSTS, originAllowed, splitHostPort } from "./hosts.js";
export { lazyBuiltin } from "./lazy-builtin.js";
export {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_MAX_REVISIONS,
  DEFAULT_STEP_RUN_TIMEOUT_SECONDS,
  LOG_HEAD_BYTES,
  LOG_INLINE_MAX_BYTES,
  LOG_TAIL_BYTES,
  MAX_CAPTURE_BYTES,
  MAX_DEPTH,
  MAX_ID_CHARS,
  MAX_INPUT_BYTES,
  MAX_LEASE_SECONDS,
  MAX_LOG_TEXT_CHARS,
  MAX_PATH_CHARS,
  MAX_STEP_RUN_TIMEOUT_SECONDS,
  MAX_STEPS_PER_PLAN,
  MAX_TEXT_CHARS,
  MAX_TITLE_CHARS,
  MAX_UNIT_CHARS,
  SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_PAGE_SIZE,
  SQLITE_WAL_CHECKPOINT_BYTES,
} from "./limits.js";
export { MIN_SECRET_LENGTH, Redactor } from "./redact.js";
export type { Infer, Schema } from "./schema.js";
export { arr, bool, num, obj, oneOf, opt, str } from "./schema.js";
export {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  FORBIDDEN_KEYS,
  firstInvalidUtf8,
  MAX_INPUT_DEPTH,
  parseJsonStrict,
} from "./strict-input.js";
export type { Truncated } from "./truncate.js";
export { headTail, truncationMarker, utf8Length } from "./truncate.js";
