"""Summarises the greetings written by the `greet` step (its output folder is argv[1])."""
import json
import os
import sys

greet_dir = sys.argv[1]
with open(os.path.join(greet_dir, "greetings.json")) as f:
    data = json.load(f)

names = sorted({g["name"] for g in data["greetings"]})
summary = {
    "language": data["language"],
    "count": len(data["greetings"]),
    "names_seen": len(names),
    "names": names,
}
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(f"{summary['count']} greetings in {summary['language']}")
