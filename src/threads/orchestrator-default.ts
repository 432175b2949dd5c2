/**
 * The built-in orchestrator, version 0: the Python loop every thread runs unless a newer stored
 * version (`orchestrator:main`, tag `orchestrator_code`) wins. It runs in Monty, calls the host
 * through the `__name__` functions of docs/threads.md, and owns skill selection (scoring, budget,
 * injection), so a mission can evolve it without touching the host.
 */
export const DEFAULT_ORCHESTRATOR_VERSION = 0;

export const DEFAULT_ORCHESTRATOR = `# Ratchet orchestrator v0 (built in).
import re


def skill_words(text):
    return re.findall(r"[a-z0-9_+#.-]+", text.lower())


def score_skill(skill, goal):
    text = goal.lower()
    words = skill_words(goal)
    for ex in skill.get("excluded_keywords", []):
        if ex.lower() in text:
            return 0
    kw = 0
    for k in skill.get("keywords", []):
        k = k.lower()
        if k in words:
            kw += 10
        elif k in text:
            kw += 5
    kw = min(kw, 30)
    tag = 0
    for t in skill.get("tags", []):
        if t.lower() in text:
            tag += 3
    tag = min(tag, 15)
    pat = 0
    for p in skill.get("patterns", []):
        if re.search(p, goal, re.IGNORECASE):
            pat += 20
    pat = min(pat, 40)
    score = kw + tag + pat
    if skill.get("source") == "learned":
        uses = skill.get("success_count", 0) + skill.get("failure_count", 0)
        if uses > 0:
            score = score * skill.get("success_count", 0) / uses
    return score


def select_skills(skills, goal, budget_tokens, max_active):
    scored = []
    for s in skills:
        sc = score_skill(s, goal)
        if sc > 0:
            scored.append({"score": sc, "skill": s})
    scored = sorted(scored, key=lambda e: -e["score"])
    picked = []
    used = 0
    for e in scored:
        if len(picked) >= max_active:
            break
        cost = len(e["skill"]["content"]) // 4 + 1
        if used + cost > budget_tokens:
            continue
        used += cost
        picked.append(e["skill"])
    return picked


def format_skills(skills):
    blocks = []
    for s in skills:
        blocks.append('<skill name="' + s["name"] + '">\\n' + s["content"].strip() + "\\n</skill>")
    return "## Active Skills\\n\\n" + "\\n\\n".join(blocks)


def extract_code(text):
    m = re.search(r"\`\`\`(?:python|repl)\\n(.*?)\`\`\`", text, re.DOTALL)
    if m:
        return m.group(1)
    return None


def run_actions(calls):
    for c in calls:
        try:
            __execute_action__(c["name"], c["args"], call_id=c["call_id"])
        except PermissionError as e:
            __emit_event__("action_refused", name=c["name"], error=str(e))
        except Exception as e:
            __emit_event__("action_error", name=c["name"], error=str(e))


def run_loop(goal, config):
    system = config["system_prompt"]
    state = {"step": 0, "active_skill_ids": []}
    if not config.get("resumed"):
        skills = select_skills(__list_skills__(), goal, config["skill_budget_tokens"], config["max_skills"])
        if len(skills) > 0:
            system = system + "\\n\\n" + format_skills(skills)
            state["active_skill_ids"] = [s["doc_id"] for s in skills]
            __emit_event__("skill_activated", skill_names=",".join([s["name"] for s in skills]))
        __add_message__("user", goal)
    actions = __get_actions__()
    while True:
        if __check_signals__() == "cancel":
            return {"outcome": "cancelled"}
        budget = __check_budget__()
        if not budget["ok"]:
            return {"outcome": "budget_exhausted", "reason": budget["reason"]}
        reply = __llm_complete__(system=system, actions=actions)
        calls = reply["action_calls"]
        code = extract_code(reply["text"])
        if len(calls) > 0:
            run_actions(calls)
        final_answer = None
        if code is not None:
            step = __execute_code_step__(code)
            out = step["output"]
            if step["error"] is not None:
                out = out + "\\nError: " + step["error"]
            __add_message__("user", "Code step output:\\n" + out)
            final_answer = step["final"]
        state["step"] = state["step"] + 1
        __save_checkpoint__(state)
        __emit_event__("step_completed", step=state["step"])
        if final_answer is not None:
            FINAL(final_answer)
            for sid in state["active_skill_ids"]:
                __record_skill_usage__(sid, True)
            return {"outcome": "completed"}
        if len(calls) == 0 and code is None:
            FINAL(reply["text"])
            for sid in state["active_skill_ids"]:
                __record_skill_usage__(sid, True)
            return {"outcome": "completed"}


run_loop(goal, config)
`;
