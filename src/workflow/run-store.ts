/**
 * The run tables through the store's runs area (`src/store/runs.ts`: the `RunStore` contract, its
 * SQLite and PostgreSQL implementations). The workflow engine depends on the interface only and
 * gets the implementation of its store from `runStoreOf`.
 */
export {
  NO_GROUP,
  type QueuedRunInput,
  type RunClaim,
  type RunLease,
  RunStatus,
  type RunStepOutcome,
  type RunStore,
  runStoreOf,
  type StepEvidence,
  summariseEvidence,
  type WorkflowRunRow,
  type WorkflowStepRunRow,
} from "../store/index.js";
