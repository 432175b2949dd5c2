"""Writes one greeting per name in the requested language."""
import json
import os

WORDS = {"en": "Hello", "fr": "Bonjour", "de": "Hallo"}

out_dir = os.environ["STEP_OUTPUT_DIR"]
language = os.environ["VAR_LANGUAGE"]
names = [n.strip() for n in os.environ["VAR_NAMES"].split(",") if n.strip()]
if language not in WORDS:
    raise SystemExit(f"unsupported language {language!r}: use one of {', '.join(WORDS)}")

greetings = [{"name": n, "text": f"{WORDS[language]}, {n}!"} for n in names]
with open(os.path.join(out_dir, "greetings.json"), "w") as f:
    json.dump({"language": language, "greetings": greetings}, f, indent=2)
for g in greetings:
    print(g["text"])
