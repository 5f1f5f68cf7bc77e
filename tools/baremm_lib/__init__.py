"""Host-side tools for baremm: run QEMU, parse the serial log, compare, plot.

Standard library only. The command-line entry point is tools/baremm (see cli.py);
the output format is documented in docs/OUTPUT.md.
"""
