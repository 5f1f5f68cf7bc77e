import unittest

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import read, data  # noqa: E402  (also puts tools/ on sys.path)
from baremm_lib import logparse, runner


class MachineAndNoiseTest(unittest.TestCase):
    def test_firmware_noise_skipped(self):
        p = logparse.parse_log(read("tests_pass_bios.log"))
        self.assertEqual(p["errors"], [])
        self.assertEqual(p["warnings"], [])
        m = p["machine"]
        self.assertEqual(m["cpu_model"], "QEMU TCG CPU version 2.5+")
        self.assertEqual(m["tsc_khz"], 2100000)
        self.assertEqual(m["cpus"], 2)
        self.assertEqual(m["apic"], "x2apic")
        self.assertEqual(m["cmdline"], "tests=*")
        self.assertEqual(p["status"], "pass")
        self.assertGreater(p["kernel_start_line"], 5)

    def test_ovmf_noise(self):
        p = logparse.parse_log(read("tests_fail_uefi.log"))
        self.assertEqual(p["machine"]["mem_mib"], 6144)
        self.assertEqual(p["errors"], [])

    def test_clean_line(self):
        self.assertEqual(logparse.clean_line("\x1b[2J\x1b[01;01HBAREMM-END x=1\r"),
                         "BAREMM-END x=1")
        self.assertEqual(logparse.clean_line("abc\rdef"), "def")
        self.assertEqual(logparse.clean_line("\x1bcSeaBIOS"), "SeaBIOS")

    def test_glued_first_line(self):
        log = ("Booting `baremm'...BAREMM-MACHINE cpus=1 cpu_model=\"a b\"\n"
               "BAREMM-END status=pass results=0\n")
        p = logparse.parse_log(log)
        self.assertEqual(p["machine"], {"cpus": 1, "cpu_model": "a b"})

    def test_kv_quotes(self):
        kv = logparse.parse_kv('a=1 b="x y \\"z\\"" c= d=e')
        self.assertEqual(kv, {"a": "1", "b": 'x y "z"', "c": "", "d": "e"})
        with self.assertRaises(logparse.ParseError):
            logparse.parse_kv("a=1 b")
        with self.assertRaises(logparse.ParseError):
            logparse.parse_kv('a="unterminated')
        with self.assertRaises(logparse.ParseError):
            logparse.parse_kv("a=1 a=2")


class ResultTest(unittest.TestCase):
    def test_good(self):
        p = logparse.parse_log(read("bench_ab.log"))
        self.assertEqual(p["errors"], [])
        self.assertEqual(len(p["results"]), 4)
        r = p["results"][0]
        self.assertEqual(r["bench"], "smp.call_one")
        self.assertEqual(r["variant"], "tlb_ceiling:33")
        self.assertEqual(r["variants"], {"tlb_ceiling": "33"})
        self.assertEqual(r["cpus"], 2)
        self.assertEqual(r["runs"], 5)
        self.assertEqual(r["median"], 1020)
        self.assertEqual(r["mean"], 1024.4)
        self.assertEqual(r["pstddev"], 0.98)
        self.assertEqual(r["median_ns"], 485.71)
        self.assertEqual(r["events"], {"ipi_sent": 1, "call_run": 1})
        self.assertEqual(r["samples"], [1015, 1020, 1040, 1018, 1029])
        self.assertIsNone(p["results"][2]["samples"])
        self.assertEqual(p["results"][3]["median"], 25.25)
        self.assertEqual(p["info"][0]["desc"], "empty synchronous cross-CPU call to one CPU")
        self.assertEqual(p["end"]["results"], 4)

    def test_malformed(self):
        p = logparse.parse_log(read("bench_malformed.log"))
        # only the one good line yields figures
        self.assertEqual(len(p["results"]), 1)
        self.assertEqual(p["results"][0]["bench"], "smp.call_one")
        by_line = {e["line"]: e["message"] for e in p["errors"]}
        self.assertIn("not a number", by_line[16])
        self.assertIn("malformed key=value", by_line[17])
        self.assertIn("missing mean", by_line[18])
        self.assertIn("results=4 but 1", by_line[19])

    def test_truncated_last_line(self):
        p = logparse.parse_log(read("bench_truncated.log"))
        self.assertTrue(p["truncated"])
        self.assertEqual(len(p["results"]), 1)
        msgs = " | ".join(e["message"] for e in p["errors"])
        self.assertIn("line 16 is incomplete", msgs)
        self.assertIn("truncated", msgs)
        self.assertEqual(p["status"], "no_status")

    def test_missing_end(self):
        p = logparse.parse_log(read("bench_noend.log"))
        self.assertTrue(p["truncated"])
        self.assertEqual(len(p["results"]), 1)
        self.assertTrue(any("no BAREMM-END" in e["message"] for e in p["errors"]))

    def test_interleaved_tag_is_error(self):
        log = ("BAREMM-MACHINE cpus=1\n"
               "    ok 1 fooBAREMM-RESULT bench=a.b variant=default cpus=1 metric=m unit=ns "
               "runs=1 median=1 mean=1 stddev=0 pstddev=0 min=1 max=1\n"
               "BAREMM-END status=pass results=1\n")
        p = logparse.parse_log(log)
        self.assertEqual(p["results"], [])
        self.assertTrue(any("middle of a line" in e["message"] for e in p["errors"]))

    def test_integer_fields(self):
        log = ("BAREMM-RESULT bench=a.b variant=default cpus=1.5 metric=m unit=ns runs=1 "
               "median=1 mean=1 stddev=0 pstddev=0 min=1 max=1\nBAREMM-END status=pass "
               "results=1\n")
        p = logparse.parse_log(log)
        self.assertEqual(p["results"], [])
        self.assertTrue(any("not an integer" in e["message"] for e in p["errors"]))

    def test_bad_variant(self):
        with self.assertRaises(logparse.ParseError):
            logparse.parse_variant("rmapbatch")
        self.assertEqual(logparse.parse_variant("a:1,b:x:y"), {"a": "1", "b": "x:y"})
        self.assertEqual(logparse.parse_variant("default"), {})

    def test_unknown_end_status(self):
        p = logparse.parse_log("BAREMM-END status=great results=0\n")
        self.assertTrue(p["truncated"])
        self.assertTrue(any("unknown status" in e["message"] for e in p["errors"]))

    def test_bad_option(self):
        p = logparse.parse_log(read("bad_option.log"))
        self.assertEqual(p["status"], "bad_option")
        self.assertEqual(p["option_errors"][0]["option"], "nosuchoption")
        self.assertEqual(logparse.option_name(" option 'x_y': unknown"), "x_y")
        self.assertEqual(logparse.option_name(" tlb_ceiling=abc: not a number"), "tlb_ceiling")

    def test_panic_backtrace(self):
        p = logparse.parse_log(read("panic.log"))
        self.assertEqual(p["status"], "panic")
        self.assertEqual(len(p["panics"]), 1)
        self.assertIn("BUG_ON", p["panics"][0]["text"])
        self.assertEqual([f["addr"] for f in p["panics"][0]["backtrace"]],
                         ["ffffffff80204a1c", "ffffffff80205b10", "ffffffff80201234"])

    def test_record_from_log_exit(self):
        rec, _ = runner.record_from_log(data("bench_truncated.log"))
        self.assertEqual(rec["tool_exit"], 18)
        rec, _ = runner.record_from_log(data("tests_pass_bios.log"))
        self.assertEqual(rec["tool_exit"], 0)
        rec, _ = runner.record_from_log(data("tests_fail_uefi.log"))
        self.assertEqual(rec["tool_exit"], 11)


if __name__ == "__main__":
    unittest.main()


MODEL_LOG = """BAREMM-MACHINE cpus=1 tsc_khz=1000000 cpu_model="x"
BAREMM-MODEL profile=skylake-sp ghz=2.1 base_cpi=0.50
BAREMM-MODEL-RUN bench=b.x variant=default cpus=1 metric=op run=0 ops=10 cycles=150.00 part.insns=100.0000 part.cache=50.0000
BAREMM-MODEL-RUN bench=b.x variant=default cpus=1 metric=op run=1 ops=10 cycles=150.00 part.insns=100.0000 part.cache=50.0000
BAREMM-MODEL-FIGURE bench=b.x variant=default cpus=1 metric=op unit=model_cycles runs=2 ops=20 ev.model_l1d_miss=30
BAREMM-RESULT bench=b.x variant=default cpus=1 metric=op unit=cycles runs=2 median=90.00 mean=90.00 stddev=0.00 pstddev=0.00 min=90.00 max=90.00 median_ns=90.00 ops=10 ev.ipi_sent=2.0000
BAREMM-SAMPLES bench=b.x variant=default cpus=1 metric=op values=90.00,90.00
BAREMM-END status=pass results=1
BAREMM-MODEL-TOTAL vcpu=0 insns=1000 cycles=2000
"""


class ModelModeTest(unittest.TestCase):
    def test_model_figures_become_the_results(self):
        p = logparse.parse_log(MODEL_LOG)
        self.assertEqual(p["errors"], [])
        self.assertEqual(p["warnings"], [])         # totals after BAREMM-END are expected
        self.assertEqual(p["mode"], "model")
        self.assertEqual(p["model"]["profile"], "skylake-sp")
        self.assertEqual(len(p["results"]), 1)
        r = p["results"][0]
        self.assertEqual(r["unit"], "model_cycles")
        self.assertEqual(r["median"], 150)
        self.assertEqual(r["samples"], [150, 150])      # its own SAMPLES, not the guest's
        self.assertEqual(r["instructions"], 90)
        self.assertEqual(r["events"], {"model_l1d_miss": 1.5, "ipi_sent": 2.0})
        self.assertEqual(r["extra"]["part.cache"], "50.0000")
        self.assertEqual(p["icount_results"][0]["samples"], [90, 90])
        self.assertEqual(p["model_totals"][0]["insns"], "1000")
        self.assertEqual(runner.run_mode(None, p), "model")

    def test_guest_figure_without_model_figure_is_an_error(self):
        lines = MODEL_LOG.split("\n")
        log = "\n".join(l for l in lines if not l.startswith("BAREMM-MODEL-"))
        p = logparse.parse_log(log)
        self.assertTrue(any("no cost-model figure" in e["message"] for e in p["errors"]))
        self.assertEqual(p["results"], [])

    def test_model_error_line(self):
        log = MODEL_LOG.replace("BAREMM-END status",
                                "BAREMM-MODEL-ERROR vcpu=0 reason=no_runs\nBAREMM-END status")
        p = logparse.parse_log(log)
        self.assertTrue(any("cost model reports" in e["message"] for e in p["errors"]))

    def test_plain_icount_log_has_no_model(self):
        log = "\n".join(l for l in MODEL_LOG.split("\n") if not l.startswith("BAREMM-MODEL"))
        p = logparse.parse_log(log)
        self.assertEqual(p["errors"], [])
        self.assertIsNone(p["mode"])
        self.assertEqual(runner.run_mode(None, p), "icount")


def model_figure(cycles, parts=None, bench="b.y"):
    """The plugin's lines of one figure: one BAREMM-MODEL-RUN per value, then the totals."""
    key = "bench=%s variant=default cpus=1 metric=op" % bench
    out = []
    for i, c in enumerate(cycles):
        pt = "".join(" part.%s=%s" % kv for kv in (parts[i] if parts else {}).items())
        out.append("BAREMM-MODEL-RUN %s run=%d ops=4 cycles=%s%s" % (key, i, c, pt))
    out.append("BAREMM-MODEL-FIGURE %s unit=model_cycles runs=%d ops=%d ev.model_walk=%d"
               % (key, len(cycles), 4 * len(cycles), 3 * len(cycles)))
    return "\n".join(out) + "\n"


class ModelStatisticsTest(unittest.TestCase):
    """The plugin prints raw runs; the figure's statistics are computed once, here."""

    def parse(self, text):
        return logparse.parse_model_output("BAREMM-MODEL profile=p ghz=2.00\n" + text)

    def test_odd_runs(self):
        parts = [{"insns": "1.0000"}, {"insns": "3.0000"}, {"insns": "2.0000"}]
        r, = self.parse(model_figure(["10.00", "30.00", "20.00"], parts))
        self.assertEqual((r["median"], r["min"], r["max"], r["mean"]), (20.0, 10.0, 30.0, 20.0))
        self.assertAlmostEqual(r["stddev"], 10.0)
        self.assertAlmostEqual(r["pstddev"], 50.0)
        self.assertEqual(r["median_ns"], 10.0)          # 20 cycles at 2 GHz
        self.assertEqual(r["samples"], [10.0, 30.0, 20.0])
        self.assertEqual(r["extra"]["part.insns"], "2.0000")    # the median run's
        self.assertEqual(r["extra"]["ops"], "4")        # per run
        self.assertEqual(r["events"], {"model_walk": 0.75})     # 9 walks over 12 ops
        self.assertEqual(r["unit"], "model_cycles")

    def test_even_runs_take_the_middle_two(self):
        parts = [{"insns": "4.0000"}, {"insns": "1.0000"}, {"insns": "2.0000"}, {"insns": "3.0000"}]
        r, = self.parse(model_figure(["40.00", "10.00", "20.00", "31.00"], parts))
        self.assertEqual(r["median"], 25.5)
        self.assertEqual(r["extra"]["part.insns"], "2.5000")    # runs of 20 and 31

    def test_incomplete_runs_are_errors(self):
        text = model_figure(["1.00", "2.00", "3.00"])
        for broken in (text.replace("run=1 ", "run=2 "),                 # a run twice
                       "\n".join(l for l in text.split("\n") if "run=1 " not in l),
                       text.replace("ops=12", "ops=13"),                 # totals disagree
                       text.rsplit("BAREMM-MODEL-FIGURE", 1)[0]):         # no totals
            with self.assertRaises(logparse.ParseError):
                self.parse(broken)

    def test_serial_log_reports_incomplete_runs(self):
        log = MODEL_LOG.replace("BAREMM-MODEL-FIGURE bench=b.x", "BAREMM-MODEL-FIGURE bench=b.z")
        p = logparse.parse_log(log)
        self.assertTrue(any("without their BAREMM-MODEL-FIGURE" in e["message"]
                            for e in p["errors"]), p["errors"])


class LongLineTest(unittest.TestCase):
    """The kernel splits lines longer than 1000 characters with a trailing '\\' and a
    "BAREMM-CONT " prefix; the parser joins them, and a short SAMPLES line is an error."""

    @staticmethod
    def split(line, width=1000):
        parts, first = [], True
        while line:
            room = width - (0 if first else len(logparse.CONT_PREFIX))
            parts.append(("" if first else logparse.CONT_PREFIX) + line[:room])
            line, first = line[room:], False
        return "\\\r\n".join(parts) + "\r\n"

    RESULT = ("BAREMM-RESULT bench=b variant=default cpus=1 metric=op unit=cycles runs=%d "
              "median=1 mean=1 stddev=0 pstddev=0 min=1 max=1\n")

    def log(self, nvals, runs):
        samples = "BAREMM-SAMPLES bench=b variant=default cpus=1 metric=op values=" + \
            ",".join("%d.25" % (1000 + i) for i in range(nvals))
        machine = 'BAREMM-MACHINE cpus=1 cmdline="%s"' % ("x" * 1500)
        return (self.split(machine) + self.RESULT % runs + self.split(samples)
                + "BAREMM-END status=pass results=1\n")

    def test_joined(self):
        text = self.log(1000, 1000)
        self.assertGreater(text.count(logparse.CONT_PREFIX), 6)
        p = logparse.parse_log(text)
        self.assertEqual(p["errors"], [])
        self.assertEqual(p["warnings"], [])
        self.assertEqual(p["machine"]["cmdline"], "x" * 1500)
        self.assertEqual(len(p["results"][0]["samples"]), 1000)
        self.assertEqual(p["results"][0]["samples"][999], 1999.25)
        self.assertEqual(p["results"][0]["line"], 3)   # line numbers stay physical

    def test_fewer_samples_than_runs_is_an_error(self):
        p = logparse.parse_log(self.log(143, 1000))
        self.assertTrue(any("143 values" in e["message"] for e in p["errors"]), p["errors"])

    def test_lost_first_part_is_an_error(self):
        text = self.log(1000, 1000)
        lines = text.split("\n")
        del lines[[i for i, x in enumerate(lines) if x.startswith("BAREMM-SAMPLES")][0]]
        p = logparse.parse_log("\n".join(lines))
        self.assertTrue(any("continuation" in e["message"] for e in p["errors"]), p["errors"])

    def test_cut_in_the_middle_is_incomplete(self):
        text = self.log(1000, 1000)
        cut = text[:text.index(logparse.CONT_PREFIX, text.index("BAREMM-SAMPLES")) + 20]
        p = logparse.parse_log(cut)
        self.assertTrue(p["truncated"])
        self.assertTrue(any("incomplete" in e["message"] for e in p["errors"]), p["errors"])

    def test_join_continued(self):
        self.assertEqual(logparse.join_continued("a\\\nBAREMM-CONT b\nc\\\nd\n"),
                         "ab\nc\\\nd\n")
