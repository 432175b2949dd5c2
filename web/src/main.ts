/**
 * The Ratchet dashboard. Hash routes (`#/plans/<id>`, `#/runs/<id>`, `#/scripts/<wf>/<step>/<diff>`,
 * `#/runner/<task>`, `#/reasons/<plan>`, `#/why/<project>/<target>`) choose the view; `/events` (EventSource) re-renders it when something it
 * shows changes. It reads only the public HTTP API; the token is used only for writes.
 */
import { follow, get, type Json, setToken, token } from "./api.js";
import { h, mount } from "./dom.js";
import { plansList, planView } from "./plans.js";
import { reasonsView, whyView } from "./why.js";
import { runsList, runView, tasksList, taskView, workflowsList, workflowView } from "./work.js";

const $ = (id: string) => document.getElementById(id) as HTMLElement;

function route(): string[] {
  token(); // consumes a `&token=…` in the address before the route is read
  return location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
}

function status(text: string): void {
  $("status").textContent = text;
}

let rendering: Promise<void> = Promise.resolve();
let again = false;

async function render(): Promise<void> {
  const [tab = "plans", a, b, c] = route();
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a"))
    link.classList.toggle("active", link.dataset.tab === tab);
  const side = $("side");
  const main = $("main");
  try {
    if (tab === "plans") {
      await plansList(side, a);
      if (a) await planView(main, a, $("log"));
      else mount(main, h("p", { class: "empty" }, "Choose a plan."));
    } else if (tab === "runs") {
      await runsList(side, a);
      if (a) await runView(main, a);
      else mount(main, h("p", { class: "empty" }, "Choose a run."));
    } else if (tab === "scripts") {
      await workflowsList(side, a);
      if (a) await workflowView(main, a, b, c, status);
      else mount(main, h("p", { class: "empty" }, "Choose a workflow."));
    } else if (tab === "reasons" && a) {
      await plansList(side, a);
      await reasonsView(main, a);
    } else if (tab === "why" && a && b) {
      await whyView(main, a, b);
    } else if (tab === "runner") {
      await tasksList(side, a);
      if (a) await taskView(main, a);
      else mount(main, h("p", { class: "empty" }, "Choose a task."));
    }
  } catch (e) {
    mount(main, h("div", { class: "error" }, e instanceof Error ? e.message : String(e)));
  }
}

/** Renders once at a time; a change during a render schedules exactly one more. */
function refresh(): void {
  if (again) return;
  again = true;
  rendering = rendering.then(async () => {
    again = false;
    await render();
  });
}

let pending: ReturnType<typeof setTimeout> | undefined;
function onEvent(e: Json): void {
  $("last-event").textContent = `#${e.id} ${e.type}`;
  if (pending) return;
  pending = setTimeout(() => {
    pending = undefined;
    refresh();
  }, 50);
}

async function start(): Promise<void> {
  const tokenInput = $("token") as HTMLInputElement;
  tokenInput.value = token();
  tokenInput.addEventListener("change", () => setToken(tokenInput.value.trim()));
  window.addEventListener("hashchange", () => {
    $("log").hidden = true;
    status("");
    refresh();
  });
  const health = await get("/api/health");
  refresh();
  follow(health.last_event_id, onEvent, (live) => {
    const el = $("live");
    el.textContent = live ? "live" : "reconnecting…";
    el.className = live ? "live on" : "live off";
  });
}

void start();
