/**
 * "Needs attention", the landing page (`#/`, `#/attention`): one read of `GET /api/attention`,
 * five sections with their counts — threads waiting for approval (the call and its arguments,
 * approve / deny from the card), plans awaiting review (pass / fail), recent failed runs (re-run)
 * and runner tasks, steps whose lease expired (sweep them: they fail and can be retried). Every
 * card opens its item. It re-renders on every live event like the other views.
 */
import { attempt, get, type Json } from "./api.js";
import { badge, h, mount, when } from "./dom.js";
import { rerun } from "./work.js";

type Status = (text: string) => void;

const enc = encodeURIComponent;

function pretty(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

interface SectionDef {
  key: "approvals" | "reviews" | "failed_runs" | "failed_tasks" | "stuck_steps";
  title: string;
  empty: string;
  card: (item: Json, status: Status) => HTMLElement;
}

function approvalCard(a: Json, status: Status): HTMLElement {
  const base = `/api/threads/${enc(a.thread_id)}`;
  const decide = (decision: "approve" | "deny") =>
    void attempt(
      status,
      decision,
      `${base}/${decision}`,
      { approval_id: a.approval_id },
      `${decision === "approve" ? "approved" : "denied"} ${a.approval_id}`,
    );
  return h(
    "div",
    { class: "card approval", "data-item": a.approval_id, "data-approval": a.approval_id },
    h(
      "div",
      {},
      h("strong", { "data-call-name": "" }, a.action),
      " · ",
      h("a", { href: `#/threads/${enc(a.thread_id)}` }, String(a.thread_goal).split("\n")[0]),
    ),
    h("div", { class: "meta" }, `${a.thread_id} · asked ${when(a.created_at)}`),
    h("pre", { class: "log", "data-call-args": "" }, pretty(a.args)),
    h(
      "div",
      { class: "actions" },
      h("button", { "data-action": "approve", onclick: () => decide("approve") }, "Approve"),
      h("button", { "data-action": "deny", onclick: () => decide("deny") }, "Deny"),
      h("a", { class: "link", href: `#/threads/${enc(a.thread_id)}` }, "open thread"),
    ),
  );
}

function reviewCard(p: Json, status: Status): HTMLElement {
  const close = (outcome: "pass" | "fail") =>
    void attempt(
      status,
      `review ${outcome}`,
      "/api/flows/agent-review-close",
      { plan_id: p.plan_id, outcome, summary: `${outcome} from the dashboard's attention page` },
      (r) => `review closed: plan ${r.result?.status ?? ""}`,
    );
  return h(
    "div",
    { class: "card", "data-item": p.plan_id, "data-review": p.plan_id },
    h(
      "div",
      {},
      badge(p.review_status ?? "NEEDS_REVIEW"),
      " ",
      h("a", { href: `#/plans/${enc(p.plan_id)}` }, String(p.goal).split("\n")[0]),
    ),
    h(
      "div",
      { class: "meta" },
      `${p.plan_id}${p.project ? ` · project ${p.project}` : ""} · ${when(p.updated_at)}`,
    ),
    h(
      "div",
      { class: "actions" },
      h("a", { class: "button", href: `#/plans/${enc(p.plan_id)}`, "data-action": "open-plan" }, "Open plan"),
      h("button", { "data-action": "review-pass", onclick: () => close("pass") }, "Pass review"),
      h("button", { "data-action": "review-fail", onclick: () => close("fail") }, "Fail review"),
    ),
  );
}

function runCard(r: Json, status: Status): HTMLElement {
  const f = r.failed_step;
  return h(
    "div",
    { class: "card", "data-item": r.run_id, "data-failed-run": r.run_id },
    h(
      "div",
      {},
      badge(r.status),
      " ",
      h("a", { href: `#/runs/${enc(r.run_id)}` }, `${r.workflow_id} · ${r.run_id}`),
    ),
    h(
      "div",
      { class: "meta" },
      `started ${when(r.started_at)}${r.group_name ? ` · group ${r.group_name}` : ""}${f ? ` · ${f.step_id} ${f.outcome}` : ""}`,
    ),
    f?.error || r.error ? h("pre", { class: "error" }, f?.error ?? r.error) : null,
    h(
      "div",
      { class: "actions" },
      h("button", { "data-action": "rerun", onclick: () => void rerun(r, status) }, "Re-run"),
      h("a", { class: "link", href: `#/runs/${enc(r.run_id)}` }, "open run"),
    ),
  );
}

function taskCard(t: Json): HTMLElement {
  return h(
    "div",
    { class: "card", "data-item": t.task_id, "data-failed-task": t.task_id },
    h("div", {}, badge(t.state), " ", h("a", { href: `#/runner/${enc(t.task_id)}` }, t.task_id)),
    h(
      "div",
      { class: "meta" },
      `updated ${when(t.updated_at)} · rounds ${t.rounds ?? "–"} · ${t.stop_reason ?? "no stop reason"}`,
    ),
    h(
      "div",
      { class: "actions" },
      h("a", { class: "link", href: `#/runner/${enc(t.task_id)}` }, "open task"),
    ),
  );
}

function stuckCard(s: Json, status: Status): HTMLElement {
  const href = `#/plans/${enc(s.plan_id)}/steps/${enc(s.step_id)}`;
  return h(
    "div",
    { class: "card", "data-item": s.step_id, "data-stuck": s.step_id },
    h(
      "div",
      {},
      badge("stuck"),
      " ",
      h("a", { href }, s.title),
      h("span", { class: "meta" }, ` · ${s.type}`),
    ),
    h(
      "div",
      { class: "meta" },
      `${s.step_id} · held by ${s.lease_holder ?? "–"} · lease expired ${when(s.lease_expires_at)} · last heartbeat ${when(s.heartbeat_at)}`,
    ),
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        {
          "data-action": "sweep",
          title: "fail the plan's steps whose lease expired (they can then be retried)",
          onclick: () =>
            void attempt(
              status,
              "sweep",
              "/api/flows/sweep",
              { plan_id: s.plan_id },
              (r) => `swept: ${(r.result?.swept ?? []).length} step(s) failed`,
            ),
        },
        "Sweep (fail it)",
      ),
      h("a", { class: "link", href }, "open step"),
    ),
  );
}

const SECTIONS: readonly SectionDef[] = [
  {
    key: "approvals",
    title: "Waiting for approval",
    empty: "No call waits for approval.",
    card: approvalCard,
  },
  { key: "reviews", title: "Plans awaiting review", empty: "No plan awaits review.", card: reviewCard },
  { key: "failed_runs", title: "Failed runs", empty: "No recent failed run.", card: runCard },
  {
    key: "failed_tasks",
    title: "Failed runner tasks",
    empty: "No recent failed task.",
    card: (t) => taskCard(t),
  },
  { key: "stuck_steps", title: "Stuck steps", empty: "No step's lease has expired.", card: stuckCard },
];

/** The landing page: the side list sums up the sections, the main panel holds their cards. */
export async function attentionView(side: HTMLElement, main: HTMLElement, status: Status): Promise<void> {
  const a = await get("/api/attention");
  const total = SECTIONS.reduce((n, s) => n + (a[s.key]?.count ?? 0), 0);
  const counter = document.getElementById("attention-count");
  if (counter) counter.textContent = total ? String(total) : "";
  delete side.dataset.serverSearch;
  mount(
    side,
    h("h2", {}, "Needs attention"),
    h(
      "ul",
      { class: "list" },
      SECTIONS.map((s) =>
        h(
          "li",
          {},
          h(
            "a",
            {
              href: "#/",
              "data-jump": s.key,
              onclick: (e: Event) => {
                e.preventDefault();
                document.getElementById(`attention-${s.key}`)?.scrollIntoView({ block: "start" });
              },
            },
            s.title,
            " ",
            h("span", { class: `count${a[s.key].count ? " some" : ""}` }, String(a[s.key].count)),
          ),
        ),
      ),
    ),
    h("p", { class: "meta" }, `failed runs and tasks of the last ${a.days} days`),
  );
  mount(
    main,
    h(
      "div",
      { "data-view": "attention" },
      h("h2", {}, total ? `Needs attention (${total})` : "Nothing needs attention"),
      SECTIONS.map((s) => {
        const sec = a[s.key];
        return h(
          "section",
          {
            class: "attention-section",
            id: `attention-${s.key}`,
            "data-section": s.key,
            "data-count": sec.count,
          },
          h(
            "h3",
            {},
            s.title,
            " ",
            h("span", { class: `count${sec.count ? " some" : ""}` }, String(sec.count)),
          ),
          sec.items.length === 0
            ? h("p", { class: "empty" }, s.empty)
            : h(
                "div",
                { class: "cards" },
                sec.items.map((item: Json) => s.card(item, status)),
              ),
          sec.count > sec.items.length
            ? h("p", { class: "meta" }, `showing the newest ${sec.items.length} of ${sec.count}`)
            : null,
        );
      }),
    ),
  );
}
