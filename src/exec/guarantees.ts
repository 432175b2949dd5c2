/**
 * What is and is not enforced on this machine, per guarantee, from the launcher probe: the lines
 * `ratchet doctor` and `ratchet runner doctor` print. Pure.
 */
import { enforcedBy, GUARANTEES, type Guarantee, type Launcher } from "./door.js";

/** One guarantee on this machine. */
export interface GuaranteeReport {
  guarantee: Guarantee;
  enforced: boolean;
  /** What enforces it, or what happens instead (the documented fallback). */
  detail: string;
}

const HOW: Record<Guarantee, { yes: string; no: string }> = {
  writes: {
    yes: "writes only under the output folder / worktree, a private TMPDIR, /dev/null (Landlock)",
    no: "writes are not confined (static review, the runner's guard and Node's permission model only)",
  },
  reads: {
    yes: "reads only the documented read roots: never $HOME, .ratchet/ or the store (Landlock --read)",
    no: "reads are not confined: scripts and commands can read ~/.ssh, .ratchet/secrets and the store",
  },
  metadata: {
    yes: "chmod/chown/utime/xattr outside the write roots fail",
    no: "chmod/chown/utime/xattr outside the write roots are not refused (Landlock does not cover them)",
  },
  signals: {
    yes: "no signal reaches a process outside the sandbox (Landlock signal scope)",
    no: "signals to Ratchet and other processes are not refused (needs Landlock ABI 6+)",
  },
  proc: {
    yes: "/proc/<pid>/environ|cmdline|mem|maps of processes outside the sandbox are unreadable",
    no: "other processes' /proc (Ratchet's environment included) is readable",
  },
  supervision: {
    yes: "the launcher ends everything at the time limit and cleans up, even after kill -9 of Ratchet",
    no: "time limits and cleanup hold only while Ratchet lives (the next run sweeps stale TMPDIRs)",
  },
};

/** The report for `launcher` (a launcher of kind `none` enforces nothing). */
export function guaranteeReport(launcher: Launcher): GuaranteeReport[] {
  const on = enforcedBy(launcher);
  return GUARANTEES.map((g) => ({
    guarantee: g,
    enforced: on[g],
    detail:
      launcher.kind === "none" && g === "writes"
        ? `${HOW[g].no}: ${launcher.reason}`
        : on[g]
          ? HOW[g].yes
          : HOW[g].no,
  }));
}

/** One line per guarantee: `enforced  reads: …` / `NOT       reads: …`. */
export function formatGuarantees(report: readonly GuaranteeReport[]): string[] {
  return report.map((r) => `${r.enforced ? "enforced" : "NOT     "} ${r.guarantee.padEnd(11)} ${r.detail}`);
}
