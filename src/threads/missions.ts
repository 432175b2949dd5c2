/**
 * Learning missions, fired by thread completion events read from the one event log:
 * self-improvement (a completed thread whose trace shows issues), playbook extraction (threads of
 * ≥ 5 steps and ≥ 3 actions), conversation insights (every 5th completed thread of a project).
 * Each fires at most once per source thread and at most a daily cap per mission; each runs as a
 * thread (`kind` `mission:<name>`) whose FINAL answer (JSON) names documents to write. A proposed
 * orchestrator or prompt change is stored as a proposal, applied only by `acceptProposal`.
 */

import type { ThreadsConfig } from "./config.js";
import type { Documents } from "./documents.js";
import { DocKind } from "./documents.js";
import { ThreadEvent } from "./events.js";
import type { DriveOutcome } from "./host-types.js";
import {
  INSIGHTS_EVERY_N_THREADS,
  MISSION_DAILY_CAP,
  PLAYBOOK_MIN_ACTIONS,
  PLAYBOOK_MIN_STEPS,
} from "./limits.js";
import { nextId } from "./thread-records.js";
import type { ThreadRow, ThreadStore } from "./thread-store.js";

/** What the missions need of the thread service (so missions.ts does not import service.ts). */
export interface MissionHost {
  threads: ThreadStore;
  docs: Documents;
  config: ThreadsConfig;
  start(
    goal: string,
    opts: { kind: string; parentThreadId: string; project?: string; model?: string },
  ): Promise<{ outcome: DriveOutcome; thread: ThreadRow }>;
}

export const Mission = {
  SelfImprovement: "self-improvement",
  PlaybookExtraction: "playbook-extraction",
  ConversationInsights: "conversation-insights",
} as const;
export type Mission = (typeof Mission)[keyof typeof Mission];

export interface MissionReport {
  mission: Mission;
  sourceThreadId: string;
  threadId: string | null;
  /** Documents written (ids), or why nothing was. */
  documents: string[];
  skipped?: string;
}

interface Facts {
  thread: ThreadRow;
  actions: number;
  failedActions: number;
  completedInProject: number;
}

/** Which missions a completed thread fires (pure). */
export function missionsFor(f: Facts): Mission[] {
  const out: Mission[] = [];
  if (f.thread.kind.startsWith("mission:") || f.thread.kind === "test" || f.thread.kind === "subagent")
    return out;
  if (f.failedActions > 0) out.push(Mission.SelfImprovement);
  if (f.thread.step_count >= PLAYBOOK_MIN_STEPS && f.actions >= PLAYBOOK_MIN_ACTIONS)
    out.push(Mission.PlaybookExtraction);
  if (f.completedInProject > 0 && f.completedInProject % INSIGHTS_EVERY_N_THREADS === 0)
    out.push(Mission.ConversationInsights);
  return out;
}

const GOALS: Record<Mission, string> = {
  "self-improvement":
    "Mission self-improvement. Diagnose the issues in the trace below and propose fixes. Answer with JSON only: " +
    '{"skills":[{"name","content","keywords":[],"tags":[]}],"insights":[{"title","content"}],"orchestrator":null|{"code","reason"},"prompt":null|{"content","reason"}}.',
  "playbook-extraction":
    "Mission playbook-extraction. Turn the successful trace below into a reusable procedure. Answer with JSON only: " +
    '{"playbooks":[{"title","content"}],"skills":[{"name","content","keywords":[],"tags":[]}]}.',
  "conversation-insights":
    "Mission conversation-insights. From the recent threads below, note user preferences, domain knowledge and workflow patterns. Answer with JSON only: " +
    '{"insights":[{"title","content"}]}.',
};

function trace(svc: MissionHost, t: ThreadRow): string {
  const lines = [`Thread ${t.thread_id} (${t.state}, ${t.step_count} steps): ${t.goal}`];
  for (const m of svc.threads.messages(t.thread_id).slice(-30)) {
    const text = m.content.length > 400 ? `${m.content.slice(0, 400)}…` : m.content;
    lines.push(`[${m.role}${m.tool_name ? ` ${m.tool_name}` : ""}${m.is_error ? " ERROR" : ""}] ${text}`);
  }
  for (const a of svc.threads.actions(t.thread_id))
    lines.push(`action ${a.action}: ${a.status}${a.error ? ` (${a.error})` : ""}`);
  return lines.join("\n");
}

function parseJsonAnswer(text: string | null): Record<string, unknown> | undefined {
  if (!text) return undefined;
  const m = /\{[\s\S]*\}/.exec(text);
  if (!m) return undefined;
  try {
    const v = JSON.parse(m[0]) as unknown;
    return v && typeof v === "object" ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const arr = (v: unknown): Record<string, unknown>[] =>
  Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => !!x && typeof x === "object") : [];
const strs = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

/** Writes the documents a mission's answer names; returns their ids. */
function writeDocuments(
  svc: MissionHost,
  mission: Mission,
  source: ThreadRow,
  missionThread: string,
  answer: Record<string, unknown>,
): string[] {
  const ids: string[] = [];
  const meta = { mission, source_thread_id: source.thread_id, mission_thread_id: missionThread };
  for (const s of arr(answer.skills)) {
    if (typeof s.name !== "string" || typeof s.content !== "string") continue;
    ids.push(
      svc.docs.insert({
        kind: DocKind.Skill,
        title: s.name,
        project: source.project,
        tags: strs(s.tags),
        content: s.content,
        meta: {
          ...meta,
          source: "learned",
          keywords: strs(s.keywords),
          excluded_keywords: strs(s.excluded_keywords),
          patterns: strs(s.patterns),
        },
      }).doc_id,
    );
  }
  for (const [key, kind] of [
    ["insights", DocKind.Insight],
    ["playbooks", DocKind.Playbook],
  ] as const) {
    for (const d of arr(answer[key])) {
      if (typeof d.title !== "string" || typeof d.content !== "string") continue;
      ids.push(
        svc.docs.insert({ kind, title: d.title, project: source.project, content: d.content, meta }).doc_id,
      );
    }
  }
  for (const key of ["orchestrator", "prompt"] as const) {
    const p = answer[key] as Record<string, unknown> | null | undefined;
    const content = key === "orchestrator" ? p?.code : p?.content;
    if (!p || typeof content !== "string") continue;
    ids.push(
      svc.docs.insert({
        kind: DocKind.Proposal,
        title: `${key}:proposal`,
        project: source.project,
        content,
        meta: {
          ...meta,
          target: key,
          reason: typeof p.reason === "string" ? p.reason : null,
          status: "pending",
        },
      }).doc_id,
    );
  }
  return ids;
}

/**
 * Fires the missions of every completed thread whose completion event has not been handled yet,
 * then moves each such thread Completed → Done.
 */
export async function dispatchMissions(svc: MissionHost): Promise<MissionReport[]> {
  const { threads } = svc;
  const reports: MissionReport[] = [];
  // Completion events of threads still Completed (the ones no dispatch has handled yet), oldest first.
  const events = threads
    .sql(
      `SELECT * FROM events WHERE entity_kind = 'thread' AND type = ? AND entity_id IN (SELECT thread_id FROM threads WHERE state = 'completed') ORDER BY id`,
    )
    .all(ThreadEvent.StateChanged)
    .filter(
      (e) => (JSON.parse((e as { payload: string }).payload) as { to?: string }).to === "completed",
    ) as {
    id: number;
    entity_id: string;
  }[];
  const cap = svc.config.missions.dailyCap ?? MISSION_DAILY_CAP;
  for (const e of events) {
    const source = threads.get(e.entity_id);
    if (source?.state !== "completed") continue; // handled already, or gone
    const day = threads.now().slice(0, 10);
    const actions = threads.actions(source.thread_id);
    const completedInProject = (
      threads
        .sql(
          "SELECT COUNT(*) AS n FROM threads WHERE COALESCE(project, '') = ? AND state IN ('completed', 'done') AND kind NOT LIKE 'mission:%' AND kind != 'test'",
        )
        .get(source.project ?? "") as { n: number }
    ).n;
    const fired = missionsFor({
      thread: source,
      actions: actions.length,
      failedActions: actions.filter((a) => a.status !== "succeeded").length,
      completedInProject,
    });
    const toRun: Mission[] = [];
    threads.tx(() => {
      for (const m of fired) {
        const used = (
          threads.sql("SELECT COUNT(*) AS n FROM mission_runs WHERE mission = ? AND day = ?").get(m, day) as {
            n: number;
          }
        ).n;
        if (used >= cap) {
          reports.push({
            mission: m,
            sourceThreadId: source.thread_id,
            threadId: null,
            documents: [],
            skipped: `daily cap ${cap} reached`,
          });
          continue;
        }
        const ins = threads
          .sql(
            `INSERT INTO mission_runs (id, mission, day, source_thread_id, created_at) VALUES (${nextId("mission_runs")}, ?, ?, ?, ?)
             ON CONFLICT (mission, source_thread_id) DO NOTHING`,
          )
          .run(m, day, source.thread_id, threads.now());
        if (ins.changes === 0) continue;
        threads.store.appendEvent({
          entityKind: "mission",
          entityId: m,
          type: ThreadEvent.MissionFired,
          payload: { mission: m, source_thread_id: source.thread_id, event_id: e.id },
        });
        toRun.push(m);
      }
      threads.transition(source.thread_id, "done", { expect: ["completed"] });
    });
    for (const m of toRun) {
      const goal = `${GOALS[m]}\n\n${trace(svc, source)}`;
      const r = await svc.start(goal, {
        kind: `mission:${m}`,
        parentThreadId: source.thread_id,
        ...(source.project ? { project: source.project } : {}),
        ...(source.model ? { model: source.model } : {}),
      });
      threads
        .sql("UPDATE mission_runs SET thread_id = ? WHERE mission = ? AND source_thread_id = ?")
        .run(r.thread.thread_id, m, source.thread_id);
      const answer = r.outcome === "completed" ? parseJsonAnswer(r.thread.final_result) : undefined;
      const documents = answer ? writeDocuments(svc, m, source, r.thread.thread_id, answer) : [];
      reports.push({
        mission: m,
        sourceThreadId: source.thread_id,
        threadId: r.thread.thread_id,
        documents,
        ...(answer ? {} : { skipped: `the mission thread ended ${r.outcome} without a JSON answer` }),
      });
    }
  }
  return reports;
}
