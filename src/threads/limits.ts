/** Every bound of threads, named. Documented in docs/threads.md. */

/** Interpreter time of one orchestrator VM session (since start or the last restore), seconds. */
export const ORCHESTRATOR_MAX_DURATION_SECS = 30;
/** Heap of the orchestrator VM, bytes. */
export const ORCHESTRATOR_MAX_MEMORY_BYTES = 64 * 1024 * 1024;
/** Heap allocations of the orchestrator VM. */
export const ORCHESTRATOR_MAX_ALLOCATIONS = 20_000_000;
/** Call depth of the orchestrator VM. */
export const ORCHESTRATOR_MAX_RECURSION = 200;

/** Interpreter time of one code step (nested VM), seconds. */
export const CODE_STEP_MAX_DURATION_SECS = 5;
export const CODE_STEP_MAX_MEMORY_BYTES = 16 * 1024 * 1024;
export const CODE_STEP_MAX_ALLOCATIONS = 2_000_000;
/** Characters of a code step's printed output kept for the model. */
export const CODE_STEP_MAX_OUTPUT_CHARS = 8_000;
/** Model calls (`llm_query`) one code step may make. */
export const CODE_STEP_MAX_LLM_CALLS = 8;

/** Host calls of one thread before it fails (a loop that only calls cheap host functions). */
export const MAX_HOST_CALLS = 10_000;

/**
 * Group commit: the writes of consecutive synchronous host calls share one transaction, committed
 * at the next call that reaches outside or waits, at the end of the drive, or after this many
 * writes / this long (so another process waits at most about this long for the write lock).
 */
export const GROUP_COMMIT_MAX_WRITES = 256;
export const GROUP_COMMIT_MAX_MS = 20;

/**
 * A model call saves the VM before it only when the thread has none yet or this many host calls
 * were made since the saved one (so a resume replays at most about this many journaled answers).
 */
export const SNAPSHOT_AFTER_CALLS = 500;

/** Default budgets of a thread. */
export const DEFAULT_MAX_TOKENS = 200_000;
export const DEFAULT_MAX_DURATION_MS = 30 * 60_000;
export const DEFAULT_MAX_COST_USD = 5;
export const DEFAULT_MAX_STEPS = 50;

/** Uses of the default lease a thread gets over every action. */
export const DEFAULT_LEASE_USES = 100;

/** A driver renews its claim on a thread this often. */
export const DRIVER_HEARTBEAT_MS = 2_000;
/** A driver whose heartbeat is older than this is gone (other hosts; same host checks the pid). */
export const DRIVER_LEASE_MS = 15_000;
/** How often a waiting driver looks for a decision. */
export const APPROVAL_POLL_MS = 150;
/** How long a driver waits for a decision before it lets go (the thread stays Waiting). */
export const DEFAULT_APPROVAL_WAIT_MS = 60 * 60_000;

/** How long an approval request can be decided (`threads.approval_ttl_seconds`); then it expires. */
export const DEFAULT_APPROVAL_TTL_MS = 24 * 60 * 60_000;

/** Consecutive failures of an orchestrator version before the engine falls back. */
export const ORCHESTRATOR_MAX_CONSECUTIVE_FAILURES = 3;

/** Skills injected at most, and their token budget (4 characters ≈ 1 token). */
export const SKILLS_MAX_ACTIVE = 3;
export const SKILLS_TOKEN_BUDGET = 2_000;

/** Daily caps of the learning missions. */
export const MISSION_DAILY_CAP = 5;
/** Playbook extraction: threads of at least this many steps and actions. */
export const PLAYBOOK_MIN_STEPS = 5;
export const PLAYBOOK_MIN_ACTIONS = 3;
/** Conversation insights: every this-many completed threads of a project. */
export const INSIGHTS_EVERY_N_THREADS = 5;

/** Characters of a tool result kept in the conversation. */
export const ACTION_RESULT_MAX_CHARS = 16_000;
/** Time limit of one action through the bridge. */
export const ACTION_TIMEOUT_MS = 60_000;
/** Time limit of one model call. */
export const LLM_TIMEOUT_MS = 120_000;
