"""Shared helpers for the tools' unit tests: import path and recorded logs."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(HERE, "data")
TOOLS = os.path.join(ROOT, "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)


def data(name):
    return os.path.join(DATA, name)


def read(name):
    with open(data(name), "rb") as f:
        return f.read()
