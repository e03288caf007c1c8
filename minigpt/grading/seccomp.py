"""The grading sandbox's seccomp filter: a small classic-BPF program that bubblewrap installs (``--seccomp FD``).

It denies, with ``EPERM``, the system calls no student code needs and that widen what a sandboxed process
can reach: nested user and other namespaces (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag),
``io_uring``, the kernel keyrings, ``ptrace`` and cross-process memory access, ``bpf``, ``perf_event_open``,
``userfaultfd``, every mount call, module loading, ``kexec``, clock setting, ``TIOCSTI`` on any terminal; and
``socket``/``socketpair`` of any family but ``AF_UNIX`` fail with ``EAFNOSUPPORT`` (no network is reachable from
the sandbox's namespace, but ``AF_VSOCK`` would reach a virtual machine's host).
``clone3`` fails with ``ENOSYS`` (its flags live in memory a filter cannot read), so the C library falls back
to ``clone``, whose flags are checked. x32 system calls and any other architecture than the one the filter
was built for are refused too.

The program is assembled here (no libseccomp needed) for x86_64 only, the architecture it was checked on;
elsewhere `program` returns None and the grader records that it ran without a filter (``run.json``).
"""

from __future__ import annotations

import errno
import platform
import struct

# linux/filter.h and linux/seccomp.h
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

# seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64 each, little-endian on x86_64)
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24

CLONE_NEW_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000)
TIOCSTI = 0x5412

# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl); tests/test_grading.py checks them against libseccomp.
DENIED_X86_64: dict[str, int] = {
    "ptrace": 101, "syslog": 103, "uselib": 134, "vhangup": 153, "pivot_root": 155, "_sysctl": 156,
    "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166,
    "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171, "iopl": 172,
    "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
    "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438, "process_madvise": 440,
    "mount_setattr": 442, "quotactl_fd": 443, "memfd_secret": 447,
}
CLONE_X86_64, CLONE3_X86_64, IOCTL_X86_64, SOCKET_X86_64, SOCKETPAIR_X86_64 = 56, 435, 16, 41, 53
AF_UNIX = 1


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def assemble_x86_64() -> bytes:
    """The filter for x86_64, as the bytes of a ``struct sock_filter`` array."""
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    prog = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, enosys),
    ]
    for nr in sorted(set(DENIED_X86_64.values())):
        prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, eperm)]
    prog += [_insn(_JEQ_K, 0, 1, CLONE3_X86_64), _insn(_RET_K, 0, 0, enosys)]
    # clone(flags, ...): EPERM when a CLONE_NEW* flag is set.
    prog += [
        _insn(_JEQ_K, 0, 4, CLONE_X86_64),
        _insn(_LD_W_ABS, 0, 0, _ARG0_LOW),
        _insn(_JSET_K, 0, 1, CLONE_NEW_FLAGS),
        _insn(_RET_K, 0, 0, eperm),
        _insn(_RET_K, 0, 0, RET_ALLOW),
    ]
    # ioctl(fd, TIOCSTI, ...): EPERM (typing into a terminal).
    prog += [
        _insn(_JEQ_K, 0, 4, IOCTL_X86_64),
        _insn(_LD_W_ABS, 0, 0, _ARG1_LOW),
        _insn(_JEQ_K, 0, 1, TIOCSTI),
        _insn(_RET_K, 0, 0, eperm),
        _insn(_RET_K, 0, 0, RET_ALLOW),
    ]
    # socket(domain, ...) and socketpair(domain, ...): only AF_UNIX (what multiprocessing uses).
    for nr in (SOCKET_X86_64, SOCKETPAIR_X86_64):
        prog += [
            _insn(_JEQ_K, 0, 4, nr),
            _insn(_LD_W_ABS, 0, 0, _ARG0_LOW),
            _insn(_JEQ_K, 1, 0, AF_UNIX),
            _insn(_RET_K, 0, 0, RET_ERRNO | errno.EAFNOSUPPORT),
            _insn(_RET_K, 0, 0, RET_ALLOW),
        ]
    prog.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    return b"".join(prog)


def program() -> bytes | None:
    """The filter for this machine's architecture, or None where none is built (see the module docstring)."""
    if platform.machine() in ("x86_64", "AMD64"):
        return assemble_x86_64()
    return None


def denied_names() -> list[str]:
    """The system calls the filter refuses outright (besides clone with namespace flags, clone3 and TIOCSTI)."""
    return sorted(DENIED_X86_64)
