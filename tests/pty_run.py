"""Runs a command on a new pseudo-terminal, the way a shell runs it in a terminal window.

The command leads a new session whose controlling terminal is the pty, and is its foreground
process group: a Ctrl-C byte (0x03) written to the terminal makes the kernel send SIGINT to that
group, exactly as when a person presses Ctrl-C. This script relays its own stdin to the terminal
and the terminal's output to its stdout. It first prints `pid N` (the command's pid) and last
`exit N` (the command's exit code, or minus the signal that ended it).

Usage: python3 tests/pty_run.py COMMAND [ARG...]
"""

import os
import pty
import select
import sys


def main() -> int:
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    out = sys.stdout.buffer
    out.write(f"pid {pid}\n".encode())
    out.flush()
    inputs = [master, sys.stdin.fileno()]
    while True:
        ready, _, _ = select.select(inputs, [], [])
        if master in ready:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the command and everything on the terminal have gone
                data = b""
            if not data:
                break
            out.write(data)
            out.flush()
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 4096)
            if data:
                os.write(master, data)
            else:
                inputs.remove(sys.stdin.fileno())
    _, status = os.waitpid(pid, 0)
    out.write(f"\nexit {os.waitstatus_to_exitcode(status)}\n".encode())
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
