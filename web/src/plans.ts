/** Plans: the list, and one plan as a tree with parallel branches, logs, deviations, metrics, skills. */

import { canCloseReview, canRetry } from "./allowed.js";
import { attempt, get, type Json } from "./api.js";
import { badge, h, mount, seconds, when } from "./dom.js";
import { dayBound, filterBar, loadMore, pagedItems } from "./filters.js";
import { childrenByParent, parallelRows } from "./lanes.js";
import { timeline } from "./timeline.js";

/** Plan kinds that belong to a workflow or builder run: left out of the list unless asked for. */
const RUN_KINDS = "workflow_run,builder_run";

/**
 * The plan list: filters (status, kind, project, created range, runs' plans), the search box's
 * words (goal or a step title, searched by the server), 50 a page with "load more".
 */
export async function plansList(
  el: HTMLElement,
  selected: string | undefined,
  search: string,
): Promise<void> {
  const f = filterBar("plans", [
    {
      name: "status",
      label: "status",
      type: "select",
      options: ["IN_PROGRESS", "COMPLETED", "FAILED", "ABANDONED"],
    },
    { name: "kind", label: "kind", type: "select", options: ["plan", "workflow_run", "builder_run"] },
    { name: "project", label: "project", type: "text" },
    { name: "since", label: "from", type: "date" },
    { name: "until", label: "to", type: "date" },
    { name: "all", label: "include workflow/builder run plans", type: "check" },
  ]);
  const query: Record<string, string> = { limit: "50" };
  if (f.status) query.status = f.status;
  if (f.kind) query.kind = f.kind;
  else if (!f.all) query.exclude_kind = RUN_KINDS;
  if (f.project) query.project = f.project;
  const since = dayBound(f.since, false);
  const until = dayBound(f.until, true);
  if (since) query.since = since;
  if (until) query.until = until;
  if (search.trim()) query.q = search.trim();
  const { items, next } = await pagedItems("plans", "/api/plans", query);
  el.dataset.serverSearch = "1";
  mount(
    el,
    h("h2", {}, "Plans"),
    items.length === 0
      ? h("p", { class: "empty" }, search || Object.keys(f).length ? "No plan matches." : "No plans yet.")
      : null,
    h(
      "ul",
      { class: "list" },
      items.map((p: Json) =>
        h(
          "li",
          { class: p.plan_id === selected ? "selected" : "" },
          h(
            "a",
            { href: `#/plans/${encodeURIComponent(p.plan_id)}`, "data-plan": p.plan_id },
            badge(p.status),
            " ",
            h("span", { class: "goal" }, p.goal.split("\n")[0]),
          ),
          h("div", { class: "meta" }, `${p.plan_id} · ${p.kind} · ${when(p.created_at)}`),
        ),
      ),
    ),
    loadMore("plans", next, items.length),
  );
}

/** The address of a step of a plan (and of its log). */
export function stepHref(planId: string, stepId: string, log = false): string {
  return `#/plans/${encodeURIComponent(planId)}/steps/${encodeURIComponent(stepId)}${log ? "/log" : ""}`;
}

function stepCard(s: Json, selected: string | undefined, action: HTMLElement | null): HTMLElement {
  const short = s.step_id.startsWith(`${s.plan_id}-`) ? s.step_id.slice(s.plan_id.length + 1) : s.step_id;
  return h(
    "div",
    {
      class: `step step-${s.status.toLowerCase()}${s.step_id === selected ? " selected" : ""}`,
      "data-step": s.step_id,
      "data-status": s.status,
    },
    h(
      "div",
      { class: "step-head" },
      badge(s.status),
      h("a", { class: "step-id", title: s.step_id, href: stepHref(s.plan_id, s.step_id) }, short),
      h("span", { class: "step-type" }, s.type),
      h("a", { class: "link", "data-log": s.step_id, href: stepHref(s.plan_id, s.step_id, true) }, "log"),
    ),
    h("div", { class: "step-title" }, s.title),
    h(
      "div",
      { class: "meta" },
      [
        s.duration_ms !== null ? seconds(s.duration_ms) : null,
        s.exit_code !== null ? `exit ${s.exit_code}` : null,
        s.tokens ? `${s.tokens} tokens` : null,
        s.started_at ? `started ${when(s.started_at)}` : null,
      ]
        .filter(Boolean)
        .join(" · "),
    ),
    s.summary ? h("div", { class: "summary" }, s.summary) : null,
    s.failure_reason ? h("div", { class: "error" }, s.failure_reason) : null,
    action,
  );
}

function tree(
  steps: Json[],
  selected: string | undefined,
  action: (s: Json) => HTMLElement | null,
): HTMLElement {
  const byParent = childrenByParent(steps);
  const branch = (parent: string | null): HTMLElement => {
    const rows = parallelRows(byParent.get(parent) ?? []);
    return h(
      "div",
      { class: "branch" },
      rows.map((row) =>
        h(
          "div",
          {
            class: row.length > 1 ? "row parallel" : "row",
            "data-parallel": row.length > 1 ? String(row.length) : undefined,
          },
          row.map((s) =>
            h(
              "div",
              { class: "lane" },
              stepCard(s, selected, action(s)),
              (byParent.get(s.step_id) ?? []).length ? branch(s.step_id) : null,
            ),
          ),
        ),
      ),
    );
  };
  return branch(null);
}

type Status = (text: string) => void;

/** "Retry": one retry sub-step under the failed step (`deviate`), offered where the ledger allows. */
function retryButton(v: Json, s: Json, status: Status): HTMLElement | null {
  if (!canRetry(v.plan, s, v.steps)) return null;
  return h(
    "button",
    {
      "data-action": "retry-step",
      "data-retry": s.step_id,
      onclick: () =>
        void attempt(
          status,
          "retry",
          "/api/flows/deviate",
          {
            parent_step_id: s.step_id,
            justification: `retry of ${s.step_id} from the dashboard`,
            sub_steps: [{ title: `Retry: ${s.title}`, type: s.type }],
          },
          (r) => `retry added: ${(r.result?.sub_step_ids ?? r.result?.step_ids ?? []).join(", ")}`,
        ),
    },
    "Retry",
  );
}

/** Verdicts being typed, by plan: a live re-render of the page keeps them (and the focus). */
const verdicts = new Map<string, string>();

/** "Close the review": pass or fail with a one-line verdict (`agent-review-close`). */
function reviewClose(v: Json, status: Status): HTMLElement | null {
  if (!canCloseReview(v.plan, v.steps)) return null;
  const planId = v.plan.plan_id as string;
  const verdict = h("input", {
    "data-review-summary": "",
    placeholder: "the verdict in one sentence",
    autocomplete: "off",
    oninput: () => verdicts.set(planId, verdict.value),
  });
  verdict.value = verdicts.get(planId) ?? "";
  const close = (outcome: "pass" | "fail") =>
    void attempt(
      status,
      `review ${outcome}`,
      "/api/flows/agent-review-close",
      {
        plan_id: v.plan.plan_id,
        outcome,
        ...(verdict.value.trim() ? { summary: verdict.value.trim() } : {}),
      },
      (r) => {
        verdicts.delete(planId);
        return `review closed: plan ${r.result?.status ?? ""}`;
      },
    );
  return h(
    "div",
    { class: "attention review-close", "data-review-close": "" },
    h("h3", {}, "Awaiting review"),
    h("p", { class: "meta" }, "Close the agent review of this plan: pass completes it, fail fails it."),
    verdict,
    h(
      "div",
      { class: "actions" },
      h("button", { "data-action": "review-pass", onclick: () => close("pass") }, "Pass review"),
      h("button", { "data-action": "review-fail", onclick: () => close("fail") }, "Fail review"),
    ),
  );
}

export async function planView(
  el: HTMLElement,
  planId: string,
  selected: string | undefined,
  status: Status,
): Promise<void> {
  const v = await get(`/api/plans/${encodeURIComponent(planId)}`);
  const typing = document.activeElement?.hasAttribute("data-review-summary") === true;
  mount(
    el,
    h("h2", {}, badge(v.plan.status), " ", v.plan.goal.split("\n")[0]),
    h(
      "div",
      { class: "meta" },
      `${v.plan.plan_id} · revisions ${v.plan.revision_count}/${v.plan.max_revisions}${v.plan.project ? ` · project ${v.plan.project}` : ""}`,
      v.plan.project
        ? [
            " · ",
            h(
              "a",
              { href: `#/reasons/${encodeURIComponent(v.plan.plan_id)}`, "data-reasons-link": "" },
              "reasons",
            ),
          ]
        : null,
    ),
    reviewClose(v, status),
    tree(v.steps, selected, (s) => retryButton(v, s, status)),
    h("h3", {}, "Timeline"),
    timeline(v.steps, (st: Json) => stepHref(v.plan.plan_id, st.step_id)),
    h("h3", {}, "Deviations"),
    v.deviations.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "ul",
          { class: "plain" },
          v.deviations.map((d: Json) =>
            h(
              "li",
              {},
              d.kind === "raise_budget"
                ? `#${d.id} budget ${d.old_max} → ${d.new_max}: ${d.justification}`
                : `#${d.id} under ${d.parent_step_id} → ${JSON.parse(d.sub_step_ids ?? "[]").join(", ")}: ${d.justification}`,
            ),
          ),
        ),
    h("h3", {}, "Metrics"),
    v.metrics.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "table",
          {},
          h("tr", {}, h("th", {}, "name"), h("th", {}, "value"), h("th", {}, "step")),
          v.metrics.map((m: Json) =>
            h(
              "tr",
              {},
              h("td", {}, m.name),
              h("td", {}, `${m.value}${m.unit ? ` ${m.unit}` : ""}`),
              h("td", {}, m.step_id ?? ""),
            ),
          ),
        ),
    h("h3", {}, "Skills"),
    v.skills.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "ul",
          { class: "plain" },
          v.skills.map((k: Json) => h("li", {}, `${k.name} (${k.source})${k.reason ? `: ${k.reason}` : ""}`)),
        ),
  );
  if (typing) el.querySelector<HTMLInputElement>("[data-review-summary]")?.focus();
}

/**
 * The log panel of a step. Called again on every live refresh, so lines appear as they are written;
 * the reader's scroll position in the panel is kept unless they were at its end.
 */
export async function showLog(panel: HTMLElement, stepId: string, closeHref: string): Promise<void> {
  const same = panel.dataset.logOf === stepId && !panel.hidden;
  if (!same) {
    panel.hidden = false;
    panel.dataset.logOf = stepId;
    mount(panel, h("h3", {}, `Log of ${stepId}`), h("p", { class: "meta" }, "loading…"));
  }
  const atEnd = panel.scrollTop + panel.clientHeight >= panel.scrollHeight - 4;
  const scroll = panel.scrollTop;
  const v = await get(`/api/steps/${encodeURIComponent(stepId)}`);
  mount(
    panel,
    h(
      "div",
      { class: "panel-head" },
      h("h3", {}, `Log of ${stepId}`),
      badge(v.step?.status),
      h("a", { class: "link", href: closeHref, "data-close-log": "" }, "close"),
    ),
    v.logs.length === 0
      ? h("p", { class: "empty" }, "No log lines.")
      : v.logs.map((l: Json) =>
          h(
            "div",
            { class: "log-entry" },
            h(
              "div",
              { class: "meta" },
              `${l.kind} · ${when(l.at)} · ${l.bytes} bytes${l.truncated ? " (full text from blob)" : ""}`,
            ),
            h("pre", { class: "log", "data-log-of": stepId }, l.full),
          ),
        ),
  );
  panel.scrollTop = same && !atEnd ? scroll : panel.scrollHeight;
}
