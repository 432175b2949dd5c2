/**
 * The command guard (pure, no I/O): parses a shell command line the way a shell would split it
 * (quotes, escapes, `;` `&&` `||` `|` `&` newlines, redirections, `$(…)` and backticks, `bash -c`
 * / `sh -c` / `eval` nesting, env prefixes and wrappers such as `env`, `nohup`, `timeout`) and
 * blocks destructive commands. It is a policy check in front of `run_command`, not a sandbox: the
 * worktree, the scrubbed environment and the "source unchanged" proof are the other layers.
 */

/** Where a command runs: the worktree root (absolute), and the source repository to keep out of. */
export interface GuardContext {
  worktree: string;
  /** Paths a command may not mention at all (the source repository). */
  forbiddenRoots?: readonly string[];
  /** Home directory, to resolve `~`. Anything under `~` is outside the worktree anyway. */
  home?: string;
}

export type GuardVerdict = { allowed: true } | { allowed: false; rule: string; reason: string };

interface Segment {
  words: string[];
  /** Redirection targets (`> file`, `>> file`, `&> file`). */
  writes: string[];
  /** This segment reads the previous one's output through `|`. */
  piped: boolean;
}

const SEPARATORS = [";", "&&", "||", "|&", "|", "&", "\n"];
const MAX_NESTING = 5;

/** Splits a command line into segments. Unbalanced quotes are reported as `undefined`. */
export function parseCommandLine(line: string): { segments: Segment[]; nested: string[] } | undefined {
  const segments: Segment[] = [];
  const nested: string[] = [];
  let seg: Segment = { words: [], writes: [], piped: false };
  let word: string | undefined;
  let redirect = false;
  const endWord = () => {
    if (word === undefined) return;
    if (redirect) {
      seg.writes.push(word);
      redirect = false;
    } else seg.words.push(word);
    word = undefined;
  };
  const endSegment = (sep: string) => {
    endWord();
    if (seg.words.length > 0 || seg.writes.length > 0) segments.push(seg);
    seg = { words: [], writes: [], piped: sep === "|" || sep === "|&" };
  };
  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (c === "\\" && i + 1 < line.length) {
      if (line[i + 1] !== "\n") word = (word ?? "") + line[i + 1];
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word = (word ?? "") + line.slice(i + 1, end);
      i = end + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let text = "";
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === "\\" && j + 1 < line.length) {
          text += line[j + 1];
          j++;
        } else text += line[j];
      }
      if (j >= line.length) return undefined;
      for (const m of text.matchAll(/\$\(([^)]*)\)|`([^`]*)`/g)) nested.push(m[1] ?? m[2] ?? "");
      word = (word ?? "") + text;
      i = j + 1;
      continue;
    }
    if (c === "$" && line[i + 1] === "(") {
      const end = closing(line, i + 1);
      if (end < 0) return undefined;
      nested.push(line.slice(i + 2, end));
      word = `${word ?? ""}$(…)`;
      i = end + 1;
      continue;
    }
    if (c === "`") {
      const end = line.indexOf("`", i + 1);
      if (end < 0) return undefined;
      nested.push(line.slice(i + 1, end));
      word = `${word ?? ""}$(…)`;
      i = end + 1;
      continue;
    }
    if ((c === "<" || c === ">") && line[i + 1] === "(") {
      const end = closing(line, i + 1);
      if (end < 0) return undefined;
      nested.push(line.slice(i + 2, end));
      word = `${word ?? ""}$(…)`;
      i = end + 1;
      continue;
    }
    if (c === "(" || c === ")" || c === "{" || c === "}") {
      if (word === undefined && (c === "(" || c === ")")) {
        endSegment(";");
        i++;
        continue;
      }
    }
    if (c === ">" || (c === "&" && line[i + 1] === ">")) {
      // `2>x`, `>x`, `>>x`, `&>x`, `>&2`
      if (word !== undefined && /^\d+$/.test(word)) word = undefined;
      endWord();
      let j = c === "&" ? i + 2 : i + 1;
      if (line[j] === ">") j++;
      if (line[j] === "&") {
        // `>&2`: a descriptor, not a file
        j++;
        while (j < line.length && /[\d-]/.test(line[j] as string)) j++;
        i = j;
        continue;
      }
      redirect = true;
      i = j;
      continue;
    }
    if (c === "<") {
      endWord();
      i++;
      // an input redirection: the next word is read, not written
      while (line[i] === " ") i++;
      continue;
    }
    const sep = SEPARATORS.find((s) => line.startsWith(s, i));
    if (sep) {
      endSegment(sep);
      i += sep.length;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      endWord();
      i++;
      continue;
    }
    if (c === "#" && word === undefined) {
      const nl = line.indexOf("\n", i);
      i = nl < 0 ? line.length : nl;
      continue;
    }
    word = (word ?? "") + c;
    i++;
  }
  endSegment(";");
  return { segments, nested };
}

function closing(line: string, open: number): number {
  let depth = 0;
  for (let j = open; j < line.length; j++) {
    if (line[j] === "(") depth++;
    else if (line[j] === ")" && --depth === 0) return j;
  }
  return -1;
}

/** Posix normalisation of `path` against `base` (no I/O). */
export function resolvePosix(base: string, path: string): string {
  const parts = (path.startsWith("/") ? path : `${base}/${path}`).split("/");
  const out: string[] = [];
  for (const p of parts) {
    if (p === "" || p === ".") continue;
    if (p === "..") out.pop();
    else out.push(p);
  }
  return `/${out.join("/")}`;
}

function under(path: string, root: string): boolean {
  const r = root.replace(/\/+$/, "");
  return path === r || path.startsWith(`${r}/`);
}

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash"]);
const INTERPRETERS = new Set([...SHELLS, "python", "python3", "perl", "ruby", "node"]);
const PATH_COMMANDS = new Set([
  "rm",
  "rmdir",
  "mv",
  "cp",
  "chmod",
  "chown",
  "chgrp",
  "ln",
  "unlink",
  "truncate",
  "shred",
  "install",
  "rsync",
  "tee",
  "touch",
  "mkdir",
]);
const WRAPPERS = new Set([
  "nohup",
  "time",
  "nice",
  "exec",
  "command",
  "builtin",
  "stdbuf",
  "ionice",
  "xargs",
  "then",
  "do",
  "else",
  "if",
  "while",
  "until",
  "!",
]);
const ALWAYS_BLOCKED: Record<string, string> = {
  sudo: "privilege escalation (sudo)",
  su: "privilege escalation (su)",
  doas: "privilege escalation (doas)",
  shutdown: "shutdown",
  reboot: "reboot",
  halt: "halt",
  poweroff: "poweroff",
  mkfs: "formatting a filesystem (mkfs)",
  fdisk: "partitioning (fdisk)",
  crontab: "crontab changes",
};
const GIT_BLOCKED: Record<string, string> = {
  push: "git push",
  clean: "git clean",
  config: "git config (the worktree shares the source's config)",
  remote: "git remote",
  worktree: "git worktree",
  "update-ref": "git update-ref (shared refs)",
  "symbolic-ref": "git symbolic-ref",
  "filter-branch": "git filter-branch",
  gc: "git gc",
  prune: "git prune",
  reflog: "git reflog",
  init: "git init",
};

/**
 * Decides whether `line` may run in the worktree.
 * @example checkCommand("rm -rf /", { worktree: "/tmp/w" }) // { allowed: false, rule: "path_outside", … }
 */
export function checkCommand(line: string, ctx: GuardContext, depth = 0): GuardVerdict {
  if (depth > MAX_NESTING) return deny("nesting", "commands nested too deeply");
  if (line.includes("\0")) return deny("nul", "NUL byte in the command");
  for (const root of ctx.forbiddenRoots ?? []) {
    if (root && line.includes(root))
      return deny("source_path", `the command names the source repository ${root}`);
  }
  if (
    /\.git\/(hooks|config)\b/.test(line) ||
    (/(^|[\s/])hooks\/[\w.-]+/.test(line) && line.includes(".git"))
  ) {
    return deny("git_metadata", "writes into .git/hooks or .git/config are not allowed");
  }
  if (/<\(\s*(curl|wget)\b/.test(line)) {
    return deny("pipe_to_shell", "running a downloaded script (process substitution) is not allowed");
  }
  const parsed = parseCommandLine(line);
  if (!parsed) return deny("unparsable", "unbalanced quotes or parentheses");
  for (const inner of parsed.nested) {
    const v = checkCommand(inner, ctx, depth + 1);
    if (!v.allowed) return v;
  }
  let cwd = ctx.worktree;
  const segs = parsed.segments;
  for (let k = 0; k < segs.length; k++) {
    const seg = segs[k] as Segment;
    const words = stripPrefixes(seg.words);
    const next = segs[k + 1];
    const outside = (p: string) => pathOutside(p, cwd, ctx);
    for (const w of seg.writes) {
      if (w === "/dev/null" || w === "/dev/stdout" || w === "/dev/stderr") continue;
      if (outside(w)) return deny("path_outside", `redirection writes outside the worktree: ${w}`);
    }
    const [cmdWord, ...args] = words;
    if (cmdWord === undefined) continue;
    const cmd = cmdWord.split("/").pop() ?? cmdWord;
    const blocked =
      ALWAYS_BLOCKED[cmd] ?? (cmd.startsWith("mkfs") ? "formatting a filesystem (mkfs)" : undefined);
    if (blocked) return deny(cmd.startsWith("mkfs") ? "mkfs" : cmd, `${blocked} is not allowed`);
    if ((cmd === "init" || cmd === "telinit") && (args[0] === "0" || args[0] === "6")) {
      return deny("shutdown", "shutdown/reboot is not allowed");
    }
    if (SHELLS.has(cmd) || cmd === "eval") {
      const script = cmd === "eval" ? args.join(" ") : shellScript(args);
      if (script !== undefined) {
        const v = checkCommand(script, ctx, depth + 1);
        if (!v.allowed) return v;
      }
    }
    if ((cmd === "curl" || cmd === "wget") && next?.piped) {
      const nextWords = stripPrefixes(next.words);
      const first = nextWords[0] === "sudo" ? nextWords[1] : nextWords[0];
      const nextCmd = first?.split("/").pop() ?? "";
      if (INTERPRETERS.has(nextCmd)) {
        return deny("pipe_to_shell", `${cmd} piped into ${nextCmd} is not allowed`);
      }
    }
    if (PATH_COMMANDS.has(cmd)) {
      const positional = args.filter((a) => !a.startsWith("-"));
      // cp/install/rsync only write their last operand; the others change every operand
      const targets =
        cmd === "cp" || cmd === "install" || cmd === "rsync" ? positional.slice(-1) : positional;
      for (const a of targets) {
        if (outside(a)) return deny("path_outside", `${cmd} targets a path outside the worktree: ${a}`);
      }
    }
    if (cmd === "dd" && args.some((a) => a.startsWith("of="))) {
      return deny("dd", "dd with of= is not allowed");
    }
    if (cmd === "find" && args.some((a) => a === "-delete" || a === "-exec" || a === "-execdir")) {
      for (const a of args) {
        if (a.startsWith("-") || a === "!" || a === "(") break;
        if (outside(a)) return deny("path_outside", `find -delete/-exec outside the worktree: ${a}`);
      }
    }
    if (cmd === "git") {
      const v = checkGit(args, cwd, ctx);
      if (!v.allowed) return v;
    }
    if (cmd === "cd" || cmd === "pushd") {
      const target = args.find((a) => !a.startsWith("-")) ?? "~";
      if (outside(target)) return deny("path_outside", `cd leaves the worktree: ${target}`);
      cwd = resolvePosix(cwd, target);
    }
  }
  return { allowed: true };
}

function deny(rule: string, reason: string): GuardVerdict {
  return { allowed: false, rule, reason };
}

/** Drops `NAME=value` prefixes and wrappers (`env -i`, `nohup`, `timeout 5`, `xargs -0`…). */
function stripPrefixes(words: readonly string[]): string[] {
  let i = 0;
  for (;;) {
    const w = words[i];
    if (w === undefined) return [];
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) {
      i++;
      continue;
    }
    if (w === "env") {
      i++;
      while (
        words[i] !== undefined &&
        ((words[i] as string).startsWith("-") || /^[A-Za-z_]\w*=/.test(words[i] as string))
      )
        i++;
      continue;
    }
    if (w === "timeout") {
      i++;
      while ((words[i] ?? "").startsWith("-")) i++;
      i++; // the duration
      continue;
    }
    if (WRAPPERS.has(w)) {
      i++;
      while ((words[i] ?? "").startsWith("-")) i++;
      continue;
    }
    return words.slice(i);
  }
}

/** The script of `bash -c SCRIPT` / `sh -lc SCRIPT`, or undefined when there is no `-c`. */
function shellScript(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (!a.startsWith("-")) return undefined;
    if (/^-[a-z]*c[a-z]*$/.test(a)) return args[i + 1] ?? "";
  }
  return undefined;
}

/** True when `path` leaves the worktree (absolute elsewhere, `~`, `..` escapes, `$VARS`). */
function pathOutside(path: string, cwd: string, ctx: GuardContext): boolean {
  if (path.startsWith("~")) return true;
  if (/\$\{?[A-Za-z_]/.test(path) && !path.includes("$(…)")) return true;
  if (path.includes("$(…)")) return true;
  return !under(resolvePosix(cwd, path), ctx.worktree);
}

function checkGit(args: readonly string[], cwd: string, ctx: GuardContext): GuardVerdict {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith("-")) {
    const a = args[i] as string;
    if (a === "-C") {
      const dir = args[i + 1] ?? "";
      if (pathOutside(dir, cwd, ctx)) return deny("git_c", `git -C ${dir} leaves the worktree`);
      i += 2;
      continue;
    }
    if (a === "-c") {
      i += 2;
      continue;
    }
    if (a.startsWith("--git-dir") || a.startsWith("--work-tree") || a.startsWith("--exec-path")) {
      return deny("git_dir", `git ${a} is not allowed`);
    }
    i++;
  }
  const sub = args[i];
  if (sub === undefined) return { allowed: true };
  const rest = args.slice(i + 1);
  const why = GIT_BLOCKED[sub];
  if (why) return deny(`git_${sub.replaceAll("-", "_")}`, `${why} is not allowed`);
  if (sub === "reset" && rest.includes("--hard"))
    return deny("git_reset_hard", "git reset --hard is not allowed");
  if (
    sub === "branch" &&
    rest.some(
      (a) =>
        /^-[a-zA-Z]*[dDmM]/.test(a) || a === "--delete" || a === "--move" || a === "-f" || a === "--force",
    )
  ) {
    return deny("git_branch_delete", "deleting, moving or forcing branches is not allowed");
  }
  if (sub === "tag" && rest.some((a) => a === "-d" || a === "--delete" || a === "-f")) {
    return deny("git_tag", "deleting or moving tags is not allowed");
  }
  if (sub === "stash" && !["list", "show"].includes(rest[0] ?? "push")) {
    return deny("git_stash", "git stash changes the source's stash");
  }
  if (sub === "checkout" || sub === "switch") {
    if (rest.some((a) => a === "-B" || a === "-b" || a === "-c" || a === "-C")) {
      return deny("git_branch_create", "creating branches changes the source's refs");
    }
  }
  return { allowed: true };
}
