/*
 * ratchet-confine: runs one command with its writes confined, without namespaces.
 *
 *   ratchet-confine [--write DIR]... [--write-file FILE]... -- PROGRAM [ARG]...
 *   ratchet-confine --probe
 *
 * The command may read anything, but may create, change, rename or delete files only under the
 * --write folders (and write to the --write-file files, e.g. /dev/null). It cannot leave its
 * process group (setsid and setpgid fail with EPERM), so one signal to the group reaches
 * everything it started; it cannot signal processes outside its sandbox (kernels with Landlock
 * ABI 6 and later); and it is killed, with everything it started, when the process that spawned
 * ratchet-confine dies.
 *
 * How: Landlock (Linux 5.13+) for the file system and signal scope, a seccomp filter for the
 * process group, and a small supervisor: ratchet-confine vforks, the child confines itself and
 * execs PROGRAM, the parent waits and exits the way the child did. The parent stays outside the
 * sandbox so that when its own parent dies (PR_SET_PDEATHSIG) it can kill the whole group.
 *
 * Exit status: PROGRAM's own, or 128+N when a signal N ended it (the supervisor re-raises the
 * signal, so a caller sees the signal itself). Failures of ratchet-confine itself print one line
 * starting with "ratchet-confine: " on stderr and exit 125 (setup) or 127 (PROGRAM not runnable).
 *
 * --probe sets the whole sandbox up in a child, runs nothing, and prints the Landlock ABI version.
 * Exit 0 when every part works on this kernel, 125 with the reason otherwise.
 *
 * Nothing here needs a header newer than the kernel's uapi basics: the Landlock constants are
 * defined below so the program builds on older distributions and detects the running kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_SETUP 125
#define EXIT_NOT_RUNNABLE 127
#define MAX_PATHS 64

/* Landlock syscalls share one number on every architecture. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_RISCV64
#else
#error "ratchet-confine: add this architecture's AUDIT_ARCH constant"
#endif

static void fail(int code, const char *what, int err) {
  if (err)
    fprintf(stderr, "ratchet-confine: %s: %s\n", what, strerror(err));
  else
    fprintf(stderr, "ratchet-confine: %s\n", what);
  _exit(code);
}

static void usage(void) {
  fail(EXIT_SETUP,
       "usage: ratchet-confine [--write DIR]... [--write-file FILE]... -- PROGRAM [ARG]...",
       0);
}

/* The write rights this kernel's Landlock knows: everything that creates, changes or removes. */
static uint64_t write_rights(int abi) {
  uint64_t r = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR |
               LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) r |= LL_FS_REFER;
  if (abi >= 3) r |= LL_FS_TRUNCATE;
  return r;
}

static void add_path_rule(int ruleset, const char *path, uint64_t allowed, int dir) {
  int fd = open(path, O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
  if (fd < 0) {
    char what[4200];
    snprintf(what, sizeof what, "cannot open %s %s", dir ? "--write folder" : "--write-file", path);
    fail(EXIT_SETUP, what, errno);
  }
  struct ll_path_beneath_attr attr = {.allowed_access = allowed, .parent_fd = fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0) != 0) {
    char what[4200];
    snprintf(what, sizeof what, "landlock_add_rule %s", path);
    fail(EXIT_SETUP, what, errno);
  }
  close(fd);
}

/* setsid and setpgid fail with EPERM; system calls of a foreign ABI (e.g. i386 on x86_64) with ENOSYS. */
static void install_seccomp(void) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
      /* The x32 ABI shares the arch value; its numbers carry bit 30. */
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
#endif
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setsid, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setpgid, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) fail(EXIT_SETUP, "seccomp filter", errno);
}

/* Confines the calling process (the child, just before exec). Exits 125 on any failure. */
static void confine(const char **dirs, int ndirs, const char **files, int nfiles) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 1) fail(EXIT_SETUP, "Landlock is not available on this kernel", errno);
  struct ll_ruleset_attr attr = {0};
  attr.handled_access_fs = write_rights((int)abi);
  if (abi >= 6) attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) fail(EXIT_SETUP, "landlock_create_ruleset", errno);
  for (int i = 0; i < ndirs; i++) add_path_rule(ruleset, dirs[i], attr.handled_access_fs, 1);
  /* Only file rights apply to a single file. */
  uint64_t file_rights = attr.handled_access_fs & (LL_FS_WRITE_FILE | LL_FS_TRUNCATE);
  for (int i = 0; i < nfiles; i++) add_path_rule(ruleset, files[i], file_rights, 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(EXIT_SETUP, "no_new_privs", errno);
  install_seccomp();
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail(EXIT_SETUP, "landlock_restrict_self", errno);
  close(ruleset);
}

static volatile sig_atomic_t parent_died = 0;
static void on_parent_death(int sig) {
  (void)sig;
  parent_died = 1;
}

/*
 * Our parent is gone: kill the command and everything it started. That is our process group when
 * we lead it (the runner spawns us as a group leader); otherwise the group is someone else's and
 * only the command itself is ours to kill.
 */
static void kill_everything(pid_t child) {
  if (getpgrp() == getpid()) kill(0, SIGKILL);
  if (child > 0) kill(child, SIGKILL);
  _exit(EXIT_SETUP);
}

int main(int argc, char **argv) {
  /* Static, not on the stack or in registers: the vfork child below shares them with us. */
  static const char *dirs[MAX_PATHS], *files[MAX_PATHS];
  static int ndirs = 0, nfiles = 0, probe = 0, cmd = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      cmd = i + 1;
      break;
    } else if (strcmp(a, "--probe") == 0) {
      probe = 1;
    } else if (strcmp(a, "--write") == 0 && i + 1 < argc && ndirs < MAX_PATHS) {
      dirs[ndirs++] = argv[++i];
    } else if (strcmp(a, "--write-file") == 0 && i + 1 < argc && nfiles < MAX_PATHS) {
      files[nfiles++] = argv[++i];
    } else {
      usage();
    }
  }
  if (!probe && (cmd < 0 || cmd >= argc)) usage();

  pid_t self = getpid();
  /* The supervisor: when our parent dies we hear SIGUSR1 and kill the whole group. */
  struct sigaction sa = {0};
  sa.sa_handler = on_parent_death;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0) != 0) fail(EXIT_SETUP, "PR_SET_PDEATHSIG", errno);
  if (getppid() != parent) kill_everything(0);

  /* Signals aimed at the group reach the command directly; the supervisor only waits. */
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  /*
   * vfork: the child borrows our memory until it execs, which saves a page-table copy (about a
   * millisecond per script on a small VM). It only makes system calls, writes nothing we read
   * afterwards and leaves through exec or _exit, which is what vfork allows.
   */
  pid_t child = vfork();
  if (child < 0) fail(EXIT_SETUP, "vfork", errno);
  if (child == 0) {
    signal(SIGUSR1, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    /* If the supervisor is gone, so is the command. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail(EXIT_SETUP, "PR_SET_PDEATHSIG", errno);
    if (getppid() != self) _exit(EXIT_SETUP);
    confine(dirs, ndirs, files, nfiles);
    if (probe) _exit(0);
    execvp(argv[cmd], &argv[cmd]);
    char what[4200];
    snprintf(what, sizeof what, "cannot run %s", argv[cmd]);
    fail(EXIT_NOT_RUNNABLE, what, errno);
  }

  int status = 0;
  for (;;) {
    pid_t r = waitpid(child, &status, 0);
    if (parent_died) kill_everything(child);
    if (r == child) break;
    if (r < 0 && errno != EINTR) fail(EXIT_SETUP, "waitpid", errno);
  }
  if (WIFEXITED(status)) {
    if (probe && WEXITSTATUS(status) == 0) {
      long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
      printf("landlock abi %ld\n", abi);
    }
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    raise(sig);
    return 128 + sig;
  }
  return EXIT_SETUP;
}
