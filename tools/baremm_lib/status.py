"""Exit codes: kernel isa-debug-exit values, QEMU exit codes, tool exit statuses.

The one source of these numbers. kernel/exit.h, kernel/exit.c, README.md ("Exit
statuses"), docs/OUTPUT.md ("2. Exit codes"), tests/qemu/matrix.cfg and tools/debug.sh
repeat them;
tests/tools/test_status_cfg.py (StatusSourcesTest) fails when one of them drifts.

The kernel writes v to isa-debug-exit (port 0xf4); QEMU then exits with (v << 1) | 1.
Any other QEMU exit (0, a signal, killed by our host timeout) carries no kernel status.
"""

# status name -> kernel isa-debug-exit value
KERNEL_CODES = {
    "pass": 0x10,
    "test_failed": 0x11,
    "bad_option": 0x12,
    "panic": 0x13,
    "watchdog": 0x14,
    "bench_error": 0x15,
}

# Statuses the host decides (no kernel code).
HOST_STATUSES = ("host_timeout", "no_status")

# Every status name, in documentation order.
ALL_STATUSES = tuple(KERNEL_CODES) + HOST_STATUSES

# status name -> exit status of `tools/baremm run` / `parse`.
# 10 + (v - 0x10) for kernel statuses, so kernel 0x13 (panic) -> 13.
TOOL_EXIT = {
    "pass": 0,
    "test_failed": 11,
    "bad_option": 12,
    "panic": 13,
    "watchdog": 14,
    "bench_error": 15,
    "host_timeout": 16,
    "no_status": 17,
}
# The log could not be trusted: truncated (no BAREMM-END) or a malformed line.
EXIT_LOG_ERROR = 18
# The tool itself failed: build failed, QEMU or a firmware file missing, bad input file.
EXIT_TOOL_ERROR = 20
# --model host, but `tools/baremm calibrate` has not written the host's profile yet.
EXIT_NOT_CALIBRATED = 21
# `tools/baremm calibrate`: a profile key must be looked up and the CPU is not in the
# core table (tools/baremm_lib/calibrate.py, CORE_CPUS).
EXIT_UNKNOWN_CPU = 22
# argparse usage errors exit with 2 (Python's convention).
EXIT_USAGE = 2
# Interrupted (Ctrl-C), as a shell reports SIGINT: 128 + 2.
EXIT_INTERRUPTED = 130

QEMU_CODES = {(v << 1) | 1: name for name, v in KERNEL_CODES.items()}


def qemu_exit_to_status(code, timed_out=False):
    """Map a QEMU process exit code to a status name."""
    if timed_out:
        return "host_timeout"
    return QEMU_CODES.get(code, "no_status")


def tool_exit(status):
    return TOOL_EXIT.get(status, TOOL_EXIT["no_status"])


def is_status(name):
    return name in ALL_STATUSES
