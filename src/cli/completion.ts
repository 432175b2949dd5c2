/**
 * Shell completion scripts generated from the commander program: every command, sub-command and
 * flag the program defines (so a new command completes without an edit here). Pure: a program in,
 * a script out. `ratchet completion bash|zsh|fish` prints one.
 */
import type { Command } from "commander";

/** The shells `ratchet completion` writes a script for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** One command of the tree: its path of names, sub-command names (or argument choices) and flags. */
export interface CommandNode {
  path: string[];
  subcommands: string[];
  flags: string[];
  description: string;
}

/** The program's commands, depth first (the root first, its path empty). */
export function commandTree(program: Command): CommandNode[] {
  const out: CommandNode[] = [];
  const walk = (cmd: Command, path: string[]) => {
    const visible = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    // A leaf whose first argument has choices (`completion <shell>`) completes those.
    const choices = cmd.registeredArguments[0]?.argChoices ?? [];
    out.push({
      path,
      subcommands: visible.length ? visible.map((c) => c.name()) : [...choices],
      flags: [
        ...cmd.options.flatMap((o) => [o.short, o.long].filter((f): f is string => typeof f === "string")),
        "--help",
        ...(path.length === 0 ? ["--version"] : []),
      ].filter((f, i, all) => all.indexOf(f) === i),
      description: cmd.description(),
    });
    for (const c of visible) walk(c, [...path, c.name()]);
  };
  walk(program, []);
  return out;
}

const words = (xs: readonly string[]) => xs.join(" ");
/** Quotes for a single-quoted shell string. */
const sq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The completion script for `shell`. */
export function completionScript(program: Command, shell: Shell): string {
  const name = program.name();
  const tree = commandTree(program);
  switch (shell) {
    case "bash":
      return bashScript(name, tree);
    case "zsh":
      return zshScript(name, tree);
    case "fish":
      return fishScript(name, tree);
  }
}

/**
 * bash: the longest command path among the words typed so far picks the node; a word starting
 * with `-` completes its flags, anything else its sub-commands (then its flags).
 */
function bashScript(name: string, tree: CommandNode[]): string {
  const fn = `_${name.replace(/\W/g, "_")}_complete`;
  const cases = tree
    .map(
      (n) => `    ${sq(n.path.join(" "))}) subs=${sq(words(n.subcommands))}; flags=${sq(words(n.flags))} ;;`,
    )
    .join("\n");
  return `# ${name} completion for bash: eval "$(${name} completion bash)"
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" try="" w i subs flags
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    try="\${path:+$path }$w"
    if ${fn}_node "$try"; then path="$try"; fi
  done
  ${fn}_node "$path"
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    [[ \${#COMPREPLY[@]} -eq 0 && -z "$subs" ]] && COMPREPLY=($(compgen -f -- "$cur"))
  fi
  return 0
}
${fn}_node() {
  case "$1" in
${cases}
    *) return 1 ;;
  esac
  return 0
}
complete -o default -F ${fn} ${name}
`;
}

/** zsh: the bash logic through `bashcompinit` would lose descriptions, so a small native one. */
function zshScript(name: string, tree: CommandNode[]): string {
  const fn = `_${name.replace(/\W/g, "_")}`;
  const cases = tree
    .map((n) => {
      const subs = n.subcommands.map((s) => {
        const d = tree.find((t) => t.path.join(" ") === [...n.path, s].join(" "))?.description ?? "";
        return sq(`${s}:${d.replaceAll(":", "\\:").slice(0, 80)}`);
      });
      return `    ${sq(n.path.join(" "))}) subs=(${subs.join(" ")}); flags=(${n.flags.map(sq).join(" ")}) ;;`;
    })
    .join("\n");
  return `#compdef ${name}
# ${name} completion for zsh: eval "$(${name} completion zsh)" (or save as _${name} on $fpath)
${fn}_node() {
  case "$1" in
${cases}
    *) return 1 ;;
  esac
  return 0
}
${fn}() {
  local path="" try w i
  local -a subs flags
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    [[ "$w" == -* ]] && continue
    try="\${path:+$path }$w"
    if ${fn}_node "$try"; then path="$try"; fi
  done
  ${fn}_node "$path"
  if [[ "\${words[CURRENT]}" == -* ]]; then
    compadd -- $flags
  elif (( \${#subs} )); then
    _describe 'command' subs
  else
    _files
  fi
}
compdef ${fn} ${name}
`;
}

/** fish: one `complete` line per sub-command and flag, guarded by the command path typed so far. */
function fishScript(name: string, tree: CommandNode[]): string {
  const lines = [`# ${name} completion for fish: ${name} completion fish | source`, `complete -c ${name} -f`];
  for (const n of tree) {
    const guard =
      n.path.length === 0
        ? `__fish_use_subcommand`
        : `__fish_seen_subcommand_from ${n.path[n.path.length - 1]}; and not __fish_seen_subcommand_from ${
            n.subcommands.join(" ") || "__none__"
          }`;
    for (const s of n.subcommands) {
      const d = tree.find((t) => t.path.join(" ") === [...n.path, s].join(" "))?.description ?? "";
      lines.push(`complete -c ${name} -n ${sq(guard)} -a ${sq(s)} -d ${sq(d.slice(0, 80))}`);
    }
    for (const f of n.flags) {
      const opt = f.startsWith("--") ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`;
      lines.push(
        `complete -c ${name} -n ${sq(n.path.length === 0 ? "true" : `__fish_seen_subcommand_from ${n.path[n.path.length - 1]}`)} ${opt}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
