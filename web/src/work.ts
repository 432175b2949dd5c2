/** Workflow runs, learned scripts and runner tasks. */

import { canRerun } from "./allowed.js";
import { ApiError, attempt, get, getText, type Json, post, rememberRunVars, runVars } from "./api.js";
import { badge, diffView, h, mount, seconds, when } from "./dom.js";
import { dayBound, filterBar, loadMore, pagedItems } from "./filters.js";
import { runTimelineSteps } from "./run-timeline.js";
import { timeline } from "./timeline.js";

/** The run list: filters (status, workflow, trigger, started range), 50 a page with "load more". */
export async function runsList(el: HTMLElement, selected?: string): Promise<void> {
  const f = filterBar("runs", [
    {
      name: "status",
      label: "status",
      type: "select",
      options: ["running", "passed", "failed", "interrupted", "cancelled"],
    },
    { name: "workflow_id", label: "workflow", type: "text" },
    {
      name: "trigger",
      label: "trigger",
      type: "select",
      options: ["manual", "schedule", "webhook", "run_saved"],
    },
    { name: "since", label: "from", type: "date" },
    { name: "until", label: "to", type: "date" },
  ]);
  const query: Record<string, string> = { limit: "50" };
  for (const k of ["status", "workflow_id", "trigger"]) if (f[k]) query[k] = f[k]!;
  const since = dayBound(f.since, false);
  const until = dayBound(f.until, true);
  if (since) query.since = since;
  if (until) query.until = until;
  const { items, next } = await pagedItems("runs", "/api/runs", query);
  delete el.dataset.serverSearch;
  mount(
    el,
    h("h2", {}, "Workflow runs"),
    items.length === 0
      ? h("p", { class: "empty" }, Object.keys(f).length ? "No run matches." : "No runs yet.")
      : null,
    h(
      "ul",
      { class: "list" },
      items.map((r: Json) =>
        h(
          "li",
          { class: r.run_id === selected ? "selected" : "" },
          h("a", { href: `#/runs/${r.run_id}`, "data-run": r.run_id }, badge(r.status), " ", r.workflow_id),
          h(
            "div",
            { class: "meta" },
            `${r.run_id} · ${r.trigger}${r.group_name ? ` · group ${r.group_name}` : ""}`,
          ),
        ),
      ),
    ),
    loadMore("runs", next, items.length),
  );
}

/** Outcomes of a step that never ran its script or a model. */
const NOT_RUN = new Set([
  "skipped",
  "harness_failed",
  "missing_script",
  "needs_model",
  "contract_changed",
  "review_blocked",
]);

/** How a step ran: fast path (the saved script alone), a model, or not at all. */
function ranAs(s: Json): HTMLElement | string {
  if (s.outcome === null) return "–";
  if (NOT_RUN.has(s.outcome))
    return h(
      "span",
      { class: "tag not-run", "data-ran-as": "not-run" },
      s.outcome === "skipped" ? "skipped" : "did not run",
    );
  if (s.fast_path) return h("span", { class: "tag fast", "data-ran-as": "fast" }, "fast path");
  return h("span", { class: "tag model", "data-ran-as": "model" }, "model");
}

/**
 * "Re-run": a new run of the same workflow with the same group and, when this dashboard started
 * the run, the same variables (`POST /api/runs`); opens the new run.
 */
export async function rerun(r: Json, status: (t: string) => void): Promise<void> {
  const vars = runVars(r.run_id);
  const reply = await attempt(
    status,
    "re-run",
    "/api/runs",
    {
      workflow: r.workflow_path,
      ...(vars ? { vars } : {}),
      ...(r.group_name ? { group: r.group_name } : {}),
    },
    (x) => `re-run started: ${x.run_id}`,
  );
  if (reply?.run_id) {
    if (vars) rememberRunVars(reply.run_id, vars);
    location.hash = `#/runs/${reply.run_id}`;
  }
}

/** The address of a run step's row. */
const runStepHref = (runId: string, s: Json) =>
  s.run_step_id
    ? `#/runs/${encodeURIComponent(runId)}`
    : `#/plans/${encodeURIComponent(s.plan_id ?? "")}/steps/${encodeURIComponent(s.step_id)}`;

export async function runView(el: HTMLElement, runId: string, status: (t: string) => void): Promise<void> {
  const v = await get(`/api/runs/${encodeURIComponent(runId)}`);
  const r = v.run;
  const plan = r.plan_id ? await get(`/api/plans/${encodeURIComponent(r.plan_id)}`).catch(() => null) : null;
  const tlSteps = runTimelineSteps(r, v.steps, plan?.steps ?? []).map((s) => ({
    ...s,
    plan_id: r.plan_id,
  }));
  const cancel = async () => {
    try {
      const reply = await post(`/api/runs/${encodeURIComponent(runId)}/cancel`, {});
      status(`cancel: run ${reply.status ?? "cancelled"}`);
    } catch (e) {
      status(e instanceof ApiError ? `cancel refused (${e.status}): ${e.message}` : String(e));
    }
  };
  mount(
    el,
    h(
      "div",
      { class: "panel-head" },
      h("h2", { "data-run-id": r.run_id }, badge(r.status), " ", `${r.workflow_id} · ${r.run_id}`),
      r.status === "running"
        ? h("button", { "data-action": "cancel-run", onclick: () => void cancel() }, "Cancel run")
        : null,
      canRerun(r)
        ? h("button", { "data-action": "rerun", onclick: () => void rerun(r, status) }, "Re-run")
        : null,
    ),
    h(
      "div",
      { class: "meta" },
      `started ${when(r.started_at)} · finished ${when(r.finished_at)} · plan `,
      r.plan_id ? h("a", { href: `#/plans/${r.plan_id}` }, r.plan_id) : "–",
    ),
    r.error ? h("div", { class: "error" }, r.error) : null,
    h(
      "table",
      { class: "steps" },
      h(
        "tr",
        {},
        ["step", "mode", "ran as", "outcome", "tokens", "duration", "exit", "error"].map((t) =>
          h("th", {}, t),
        ),
      ),
      v.steps.map((s: Json) =>
        h(
          "tr",
          { "data-step-run": s.step_id },
          h("td", {}, s.step_id),
          h("td", {}, s.mode),
          h("td", {}, ranAs(s)),
          h("td", {}, badge(s.outcome ?? "running")),
          h("td", { class: "num" }, String(s.tokens)),
          h("td", { class: "num" }, seconds(s.duration_ms)),
          h("td", { class: "num" }, s.exit_code ?? "–"),
          h("td", {}, s.error ? h("pre", { class: "error" }, s.error) : ""),
        ),
      ),
    ),
    h("h3", {}, "Timeline"),
    timeline(tlSteps, (s: Json) => runStepHref(runId, s)),
  );
}

export async function workflowsList(el: HTMLElement, selected?: string): Promise<void> {
  const page = await get("/api/workflows");
  mount(
    el,
    h("h2", {}, "Learned scripts"),
    page.items.length === 0 ? h("p", { class: "empty" }, "No workflows yet.") : null,
    h(
      "ul",
      { class: "list" },
      page.items.map((w: Json) =>
        h(
          "li",
          { class: w.workflow_id === selected ? "selected" : "" },
          h(
            "a",
            { href: `#/scripts/${encodeURIComponent(w.workflow_id)}`, "data-workflow": w.workflow_id },
            w.workflow_id,
          ),
          h("div", { class: "meta" }, w.last_run_at ? `last run ${when(w.last_run_at)}` : "never run"),
        ),
      ),
    ),
  );
}

function streak(meta: Json): HTMLElement | null {
  if (!meta?.recent_runs?.length) return null;
  return h(
    "div",
    { class: "streak", title: `current streak ${meta.current_streak}` },
    meta.recent_runs.map((r: Json) =>
      h("span", {
        class: r.success ? "ok" : "bad",
        title: `${when(r.timestamp)} ${r.success ? "passed" : (r.failure_reason ?? "failed")}`,
      }),
    ),
    h("span", { class: "meta" }, ` streak ${meta.current_streak > 0 ? "+" : ""}${meta.current_streak}`),
  );
}

export async function workflowView(
  el: HTMLElement,
  wfId: string,
  stepId: string | undefined,
  diffName: string | undefined,
  status: (t: string) => void,
): Promise<void> {
  const wf = await get(`/api/workflows/${encodeURIComponent(wfId)}`);
  const vars = Object.entries((wf.variables ?? {}) as Record<string, Json>);
  const form = h(
    "form",
    { class: "start-form", "data-start-form": "" },
    vars.map(([name, v]) =>
      h(
        "label",
        { class: "filter", title: v?.description ?? name },
        `${name} `,
        h("input", {
          name: `var-${name}`,
          "data-var": name,
          placeholder: v?.default !== undefined ? String(v.default) : name,
          autocomplete: "off",
        }),
      ),
    ),
    (wf.groups ?? []).length
      ? h(
          "label",
          { class: "filter" },
          "group ",
          h(
            "select",
            { "data-group": "" },
            h("option", { value: "" }, "none"),
            (wf.groups as string[]).map((g) => h("option", { value: g }, g)),
          ),
        )
      : null,
  );
  const start = async () => {
    const chosen: Record<string, string> = {};
    for (const input of form.querySelectorAll<HTMLInputElement>("input[data-var]"))
      if (input.value.trim() !== "") chosen[input.dataset.var!] = input.value.trim();
    const group = form.querySelector<HTMLSelectElement>("select[data-group]")?.value ?? "";
    try {
      const r = await post("/api/runs", {
        workflow: wf.workflow_path,
        ...(Object.keys(chosen).length ? { vars: chosen } : {}),
        ...(group ? { group } : {}),
      });
      rememberRunVars(r.run_id, chosen);
      location.hash = `#/runs/${r.run_id}`;
    } catch (e) {
      status(e instanceof ApiError ? `start refused (${e.status}): ${e.message}` : String(e));
    }
  };
  const parts: (HTMLElement | null)[] = [
    h(
      "div",
      { class: "panel-head" },
      h("h2", {}, wf.workflow_id),
      h("button", { onclick: start, "data-action": "start-run" }, "Start run"),
    ),
    h("div", { class: "meta" }, wf.workflow_path),
    vars.length || (wf.groups ?? []).length ? h("div", {}, h("h3", {}, "Start with"), form) : null,
    h(
      "table",
      {},
      h(
        "tr",
        {},
        ["step", "mode", "script", "version", "runs", "streak", "evidence"].map((t) => h("th", {}, t)),
      ),
      wf.steps.map((s: Json) =>
        h(
          "tr",
          { class: s.step_id === stepId ? "selected" : "" },
          h(
            "td",
            {},
            h(
              "a",
              {
                href: `#/scripts/${encodeURIComponent(wf.workflow_id)}/${s.step_id}`,
                "data-script": s.step_id,
              },
              s.step_id,
            ),
          ),
          h("td", {}, s.mode),
          h("td", {}, s.script?.language ?? "none"),
          h("td", { class: "num" }, s.script_version ?? "–"),
          h("td", { class: "num" }, `${s.successful_runs}/${s.total_runs}`),
          h("td", { class: "num" }, s.current_streak ?? "–"),
          h(
            "td",
            {},
            `${s.evidence.successes} ok · ${s.evidence.failures} failed · groups ${s.evidence.groups_covered.join(", ") || "–"}`,
          ),
        ),
      ),
    ),
  ];
  if (stepId) {
    const sc = await get(`/api/workflows/${encodeURIComponent(wfId)}/scripts/${encodeURIComponent(stepId)}`);
    const m = sc.metadata;
    parts.push(
      h(
        "h3",
        {},
        `${stepId}: ${sc.language ?? "no saved script"}${m ? ` · version ${m.script_version} · relearned ${m.relearn_count}×` : ""}`,
      ),
      streak(m),
      m?.last_failure
        ? h(
            "div",
            { class: "error" },
            `last failure ${when(m.last_failure.timestamp)}: ${m.last_failure.failure_reason} ${m.last_failure.error_snippet}`,
          )
        : null,
      h("h3", {}, "Version history"),
      sc.diffs.length === 0
        ? h("p", { class: "empty" }, "No diffs: the script has one version.")
        : h(
            "ul",
            { class: "plain" },
            sc.diffs.map((d: Json) =>
              h(
                "li",
                { class: d.name === diffName ? "selected" : "" },
                h(
                  "a",
                  {
                    href: `#/scripts/${encodeURIComponent(wfId)}/${stepId}/${encodeURIComponent(d.name)}`,
                    "data-diff": d.name,
                  },
                  d.name,
                ),
                h("span", { class: "meta" }, ` ${d.bytes} bytes · ${when(d.modified_at)}`),
              ),
            ),
          ),
    );
    if (diffName)
      parts.push(
        h("h3", {}, `Diff ${diffName}`),
        diffView(
          await getText(
            `/api/workflows/${encodeURIComponent(wfId)}/scripts/${encodeURIComponent(stepId)}/diffs/${encodeURIComponent(diffName)}`,
          ),
        ),
      );
    parts.push(h("h3", {}, "Source"), h("pre", { class: "source" }, sc.source ?? ""));
  }
  mount(el, parts);
}

export async function tasksList(el: HTMLElement, selected?: string): Promise<void> {
  const page = await get("/api/runner/tasks");
  mount(
    el,
    h("h2", {}, "Runner tasks"),
    page.items.length === 0
      ? h("p", { class: "empty" }, "No tasks (start the server with --runner-dir).")
      : null,
    h(
      "ul",
      { class: "list" },
      page.items.map((t: Json) =>
        h(
          "li",
          { class: t.task_id === selected ? "selected" : "" },
          h(
            "a",
            { href: `#/runner/${encodeURIComponent(t.task_id)}`, "data-task": t.task_id },
            badge(t.state),
            " ",
            t.task_id,
          ),
          h(
            "div",
            { class: "meta" },
            `rounds ${t.rounds ?? "–"} · best ${t.best_score ?? "–"} · ${t.stop_reason ?? ""}`,
          ),
        ),
      ),
    ),
  );
}

export async function taskView(el: HTMLElement, taskId: string): Promise<void> {
  const t = await get(`/api/runner/tasks/${encodeURIComponent(taskId)}`);
  const patch = t.has_patch ? await getText(`/api/runner/tasks/${encodeURIComponent(taskId)}/patch`) : null;
  mount(
    el,
    h("h2", {}, badge(t.state), " ", t.task_id),
    h(
      "div",
      { class: "meta" },
      `${t.output_dir} · updated ${when(t.updated_at)} · stop ${t.stop_reason ?? "–"}`,
    ),
    h("h3", {}, "Rounds"),
    t.rounds_log.length === 0
      ? h("p", { class: "empty" }, "No rounds.")
      : h(
          "table",
          {},
          h(
            "tr",
            {},
            ["round", "score", "DoD", "detail"].map((x) => h("th", {}, x)),
          ),
          t.rounds_log.map((r: Json) =>
            h(
              "tr",
              {},
              h("td", { class: "num" }, r.round),
              h("td", { class: "num" }, r.score ?? "–"),
              h("td", {}, badge(r.dod_passed ? "passed" : "failed")),
              h("td", { class: "meta wrap" }, JSON.stringify(r)),
            ),
          ),
        ),
    h("h3", {}, "Definition of done"),
    t.dod_runs.length === 0
      ? h("p", { class: "empty" }, "No DoD runs.")
      : h(
          "ul",
          { class: "plain" },
          t.dod_runs.map((d: Json) =>
            h(
              "li",
              {},
              badge(d.passed ? "passed" : "failed"),
              ` ${d.label} · exit ${d.exit_code}${d.timed_out ? " · timed out" : ""}`,
            ),
          ),
        ),
    t.result?.dod?.output_tail ? h("pre", { class: "log" }, t.result.dod.output_tail) : null,
    h("h3", {}, "Patch"),
    patch === null ? h("p", { class: "empty" }, "No patch.") : diffView(patch),
  );
}
