"""Run a command where io_uring is refused as Docker's default seccomp
profile refuses it: `io_uring_setup`, `io_uring_enter` and
`io_uring_register` fail with EPERM.

    python tests/_seccomp.py COMMAND [ARG...]

installs the filter in this process (a classic-BPF program through
prctl(PR_SET_SECCOMP), which needs no package: ctypes only) and execs the
command, which keeps the filter (a filter survives execve and is inherited
by every child, as in a container).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

# The io_uring system calls have the same numbers on every architecture
# (they came after the numbering was unified, Linux 5.1).
IO_URING_SYSCALLS = (425, 426, 427)

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_RET_K = 0x06  # BPF_RET | BPF_K


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny_io_uring() -> None:
    """Refuse the io_uring system calls with EPERM in this thread and every
    process it starts from now on."""
    n = len(IO_URING_SYSCALLS)
    program = [_insn(_BPF_LD_W_ABS, 0, 0, 0)]  # A = seccomp_data.nr
    for i, nr in enumerate(IO_URING_SYSCALLS):
        # equal: jump to the refusal after the remaining checks and the allow
        program.append(_insn(_BPF_JEQ_K, n - i, 0, nr))
    program.append(_insn(_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    program.append(_insn(_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.EPERM))
    code = b"".join(program)
    buffer = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(program), ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def io_uring_setup_works() -> bool:
    """Whether this process may make an io_uring (the raw system call, so
    the answer does not come from ferroloop's own probe)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    fd = libc.syscall(IO_URING_SYSCALLS[0], ctypes.c_uint(4), params)
    if fd < 0:
        return False
    os.close(fd)
    return True


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: _seccomp.py COMMAND [ARG...]")
    deny_io_uring()
    os.execvp(sys.argv[1], sys.argv[1:])
