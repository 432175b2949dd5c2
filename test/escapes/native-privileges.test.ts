/**
 * Attack: a script run by a root Ratchet uses root's powers to step around the sandbox: make a
 * block device node of the disk in its write root, open a packet socket to capture loopback
 * traffic (bearer tokens), or remount / writable. The launcher keeps only Docker's default
 * capabilities minus CAP_MKNOD and CAP_NET_RAW, binds write roots nodev, and seccomp refuses the
 * mount system calls, so every one fails whoever runs it.
 */
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { launch, outcomes, python, scratch, skipReason } from "./native-kit.js";

describe.skipIf(skipReason !== undefined || !python)("native: root's powers inside the sandbox", () => {
  const s = scratch("ratchet-native-privileges-");
  const out = join(s.dir, "out");
  mkdirSync(out);
  afterAll(() => s.remove());

  it("mknod of the disk, a packet socket, mount and mount_setattr all fail", () => {
    // The device numbers of the file system holding the write root: the disk itself.
    const dev = statSync(out).dev;
    const major = Math.floor(dev / 256) & 0xfff;
    const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    const py = `
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def attempt(label, fn):
    try:
        fn()
        print(label, "ok")
    except OSError as e:
        print(label, "refused", e.errno)
def syscall_ok(label, nr, *args):
    r = libc.syscall(nr, *args)
    print(label, "ok" if r >= 0 else f"refused {ctypes.get_errno()}")
attempt("mknod", lambda: os.mknod(sys.argv[1], 0o600 | 0o060000, os.makedev(${major}, ${minor})))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
MS_REMOUNT, MS_BIND = 32, 4096
r = libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None)
print("mount", "ok" if r == 0 else f"refused {ctypes.get_errno()}")
# mount_setattr("/", AT_RECURSIVE, {attr_clr: RDONLY}) would make / writable again (442 on every arch).
attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)
syscall_ok("mount_setattr", 442, -100, b"/", 0x8000, attr, 32)
`;
    const r = launch([
      "--write",
      out,
      "--write-file",
      "/dev/null",
      "--",
      python?.exe as string,
      "-c",
      py,
      join(out, "disk"),
    ]);
    expect(r.status, r.stderr).toBe(0);
    const o = outcomes(r.stdout);
    expect(o.mknod).toBe("refused 1");
    expect(o.packet).toMatch(/^refused (1|97)$/);
    expect(o.mount).toBe("refused 1");
    expect(o.mount_setattr).toBe("refused 1");
  });
});
