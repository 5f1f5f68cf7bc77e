"""The host tools' unit tests (tests/tools), run and counted in this process.

unittest's TestResult gives the counts directly: passed = run - failed - skipped, where
failed = failures + errors (a module that does not import is an error) + unexpected
successes. The text report goes to a log stream, never to the caller's stdout.
"""
import contextlib
import os
import unittest


def run(start_dir, log, top_level_dir=None):
    """Discover and run the tests under start_dir; report to the stream log.
    Returns (passed, failed, skipped)."""
    loader = unittest.TestLoader()
    cwd = os.getcwd()
    try:
        os.chdir(top_level_dir or os.path.dirname(os.path.abspath(start_dir)))
        suite = loader.discover(start_dir, top_level_dir=start_dir)
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            result = unittest.TextTestRunner(stream=log, verbosity=2).run(suite)
    finally:
        os.chdir(cwd)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    return result.testsRun - failed - skipped, failed, skipped
