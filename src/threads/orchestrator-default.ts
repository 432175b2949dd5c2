/**
 * The built-in orchestrator, version 0: the Python loop every thread runs unless a newer stored
 * version (`orchestrator:main`, tag `orchestrator_code`) wins. It runs in Monty against the same
 * host API as the original engine's scripts (docs/threads.md, "Host API"): the injected `context`,
 * `goal`, `actions`, `state`, `config`, and the `__name__` host functions. It owns skill selection
 * (scoring, budget, injection) and the tool-intent nudge, so a mission can evolve them.
 */
export const DEFAULT_ORCHESTRATOR_VERSION = 0;

export const DEFAULT_ORCHESTRATOR = String.raw`# Ratchet orchestrator v0 (built in). Host API: docs/threads.md.

# Typographic quotes and dashes fold to ASCII before skills are matched (autocorrect input).
PUNCT_FOLD = [
    ("\u2018", "'"), ("\u2019", "'"), ("\u201a", "'"), ("\u201b", "'"),
    ("\u201c", '"'), ("\u201d", '"'), ("\u201e", '"'), ("\u201f", '"'),
    ("\u2013", "-"), ("\u2014", "-"),
]

NUDGE = ("You said you would perform an action, but you did not include any tool calls.\n"
         "Do NOT describe what you intend to do - actually call the tool now.")


def fold_punctuation(text):
    out = text
    for src, dst in PUNCT_FOLD:
        out = out.replace(src, dst)
    return out


def words_of(text):
    out = []
    for w in text.split():
        t = w.strip(".,!?;:'\"()[]{}<>")
        if t:
            out.append(t)
    return out


def score_skill(skill, goal):
    meta = skill.get("metadata", {})
    act = meta.get("activation", {})
    text = fold_punctuation(goal)
    lower = text.lower()
    words = words_of(lower)
    for ex in act.get("exclude_keywords", []):
        if fold_punctuation(ex).lower() in lower:
            return 0
    kw = 0
    for k in act.get("keywords", []):
        k = fold_punctuation(k).lower()
        if k in words:
            kw += 10
        elif k in lower:
            kw += 5
    tag = 0
    for t in act.get("tags", []):
        if t.lower() in lower:
            tag += 3
    pat = 0
    for p in act.get("patterns", []):
        if __regex_match__("(?i)" + p, text):
            pat += 20
    score = min(kw, 30) + min(tag, 15) + min(pat, 40)
    if meta.get("source") == "extracted":
        m = meta.get("metrics", {})
        total = m.get("success_count", 0) + m.get("failure_count", 0)
        if total > 0:
            score = score * m.get("success_count", 0) / total
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
        cost = max(e["skill"]["metadata"]["activation"].get("max_context_tokens", 1), 1)
        if used + cost > budget_tokens:
            continue
        used += cost
        picked.append(e["skill"])
    return picked


def format_skills(skills):
    blocks = []
    for s in skills:
        blocks.append('<skill name="' + s["metadata"]["name"] + '">\n' + s["content"].strip() + "\n</skill>")
    return "## Active Skills\n\n" + "\n\n".join(blocks)


def signals_tool_intent(text):
    lower = text.lower()
    for exc in ["let me know", "let me explain", "let me think", "let me summarize", "let me clarify"]:
        if exc in lower:
            return False
    for prefix in ["let me ", "i'll ", "i will ", "i'm going to "]:
        i = lower.find(prefix)
        while i >= 0:
            after = lower[i + len(prefix):]
            for verb in ["search", "look up", "check", "fetch", "find", "call", "run", "query", "create", "add", "append", "read", "write", "delete", "update"]:
                if after.startswith(verb):
                    return True
            i = lower.find(prefix, i + 1)
    return False


def activate_skills(goal, config, state):
    skills = select_skills(__list_skills__(), goal, config["skill_budget_tokens"], config["max_skills"])
    if len(skills) == 0:
        return
    __add_message__("system_append", format_skills(skills))
    __set_active_skills__([{"doc_id": s["doc_id"], "name": s["metadata"]["name"]} for s in skills])
    __emit_event__("skill_activated", skill_names=",".join([s["metadata"]["name"] for s in skills]))
    state["active_skill_ids"] = [s["doc_id"] for s in skills]


def run_code(code, state):
    r = __execute_code_step__(code, state)
    out = r["stdout"]
    if out == "" and r["return_value"] is not None:
        out = str(r["return_value"])
    __add_message__("user", "Code step output:\n" + out)
    return r


def run_loop(context, goal, actions, state, config):
    state["step"] = 0
    state["nudges"] = 0
    activate_skills(goal, config, state)
    for step in range(config.get("step_count", 0), config.get("max_iterations", 50)):
        signal = __check_signals__()
        if signal == "stop":
            return {"outcome": "stopped"}
        budget = __check_budget__()
        if not budget["ok"]:
            __transition_to__("failed", "budget exhausted")
            return {"outcome": "failed", "error": "budget exhausted: " + budget["reason"]}
        reply = __llm_complete__(None, actions, None)
        kind = reply["type"]
        final_answer = None
        if kind == "actions":
            __execute_actions_parallel__(reply["calls"])
        elif kind == "code":
            r = run_code(reply["code"], state)
            final_answer = r["final_answer"]
        state["step"] = state["step"] + 1
        __save_checkpoint__(state, {"nudges": state["nudges"]})
        __emit_event__("step_completed", step=state["step"])
        if final_answer is not None:
            __transition_to__("completed", "FINAL() in code")
            return {"outcome": "completed", "response": final_answer}
        if kind == "text":
            text = reply["content"]
            if config.get("enable_tool_intent_nudge", True) and state["nudges"] < config.get("max_tool_intent_nudges", 2) and len(actions) > 0 and signals_tool_intent(text):
                state["nudges"] = state["nudges"] + 1
                __emit_event__("tool_intent_nudge", count=state["nudges"])
                __add_message__("user", NUDGE)
                continue
            __transition_to__("completed", "text response")
            return {"outcome": "completed", "response": text}
    __transition_to__("completed", "max iterations reached")
    return {"outcome": "max_iterations"}


FINAL(run_loop(context, goal, actions, state, config))
`;
