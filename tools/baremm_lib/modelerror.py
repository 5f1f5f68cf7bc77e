"""The cost model's measured error, for verdicts under --model (docs/EXPERIMENTS.md, "How
a verdict is decided"; docs/COSTMODEL.md, "The native panel").

A deterministic model figure has no spread, so a verdict's interval under --model would
be a point: 0.08 % inside a 1 % band could claim `disagree`. The panel measures how far
the model's cycles are from a real core on shapes like each experiment's, and the verdict
widens its interval by that error, in percentage points of the base figure:

  * an experiment whose A/B has a panel pair (the same mechanism natively and under the
    model): error = |model effect - native effect| + half the native effect's interval
    (the native effect is itself measured, so its uncertainty is part of the error);
  * otherwise, the panel rows that do the experiment's kind of work: error = the spread
    of their model/native ratios, max / min - 1. Two variants that shift work between
    shapes the model mis-weighs relative to each other can be off by that much.

The panel data is docs/data/native-panel-<name>.json (tools/baremm native-panel --model
PROFILE --save docs/data; panel_name gives the name: per CPU for the host profile, -ooo
for the out-of-order core). Without it the error is unknown and the verdict says so: the
interval becomes unbounded (inconclusive), never a point.
"""
import json
import os

from . import runner

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_DIR = os.path.join(REPO_ROOT, "docs", "data")

# experiment id -> ("pair", panel pair A row, B row) or ("rows", rows...)
SHAPES = {
    "000": ("pair", "free_loop", "free_bulk"),
    "001": ("rows", "pingpong_cas", "ticket_handoff", "gather_unmap"),
    "002": ("rows", "pt_copy", "pt_zap", "free_loop", "free_bulk"),
    "003": ("pair", "alloc_cached", "alloc_lookup"),
    "004": ("rows", "rep_stos_page", "rep_movs_page", "chase_1g", "store_l1"),
}


_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}


def cpu_slug(cpu_id):
    """A file-name tag for the CPU of panel.cpu_id() ("vendor family model stepping",
    decimal): vendor, family and model in hex, e.g. "intel-6-cf", "amd-19-11". The
    stepping is left out: one core design per tag."""
    parts = (cpu_id or "").split()
    if len(parts) < 3 or not all(p.isdigit() for p in parts[1:3]):
        return "unknown"
    return "%s-%x-%x" % (_VENDORS.get(parts[0], parts[0].lower()), int(parts[1]), int(parts[2]))


def panel_name(profile, model_args="", cpu_id=None):
    """The name a native panel is saved under (docs/data/native-panel-<name>.json): the
    profile's; the host profile's per CPU ("host-<cpu_slug>", it is measured on and
    compared with the machine it ran on, so each CPU keeps its own); -ooo under the
    out-of-order core (core=ooo in the plugin arguments)."""
    name = profile
    if profile == "host":
        name += "-" + cpu_slug(cpu_id if cpu_id is not None else runner.host_cpuinfo()["id"])
    return name + ("-ooo" if runner.core_ooo(model_args) else "")


def panel_path(profile, data_dir=None, model_args=None, cpu_id=None):
    """The panel of a profile under the plugin arguments (default: BAREMM_MODEL_ARGS); the
    host profile's of CPU @cpu_id (default this machine's)."""
    if model_args is None:
        model_args = os.environ.get("BAREMM_MODEL_ARGS", "")
    return os.path.join(data_dir or DATA_DIR,
                        "native-panel-%s.json" % panel_name(profile, model_args, cpu_id))


def load_panel(profile, data_dir=None, model_args=None, cpu_id=None):
    try:
        with open(panel_path(profile, data_dir, model_args, cpu_id)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def error_for(exp_id, profile, panel=None, data_dir=None, model_args=None, cpu_id=None):
    """{"pp": error in percentage points or None, "how": one sentence}. The panel is the
    one of the core the figures came from (model_args, default BAREMM_MODEL_ARGS)."""
    shape = SHAPES.get(exp_id)
    if shape is None:
        return {"pp": None, "how": "no panel shape is named for experiment %s" % exp_id}
    panel = panel if panel is not None else load_panel(profile, data_dir, model_args, cpu_id)
    if panel is None:
        return {"pp": None, "how": "no native panel for profile %s (%s)" % (
            profile, os.path.relpath(panel_path(profile, data_dir, model_args, cpu_id), REPO_ROOT))}
    rows = {r["name"]: r for r in panel.get("rows", [])}
    if shape[0] == "pair":
        a, b = shape[1], shape[2]
        for p in panel.get("pairs", []):
            if p["a"] == a and p["b"] == b and p.get("model_effect") is not None:
                half = (p["hi"] - p["lo"]) / 2
                pp = 100 * (abs(p["model_effect"] - p["effect"]) + half)
                return {"pp": pp, "how": "panel pair %s/%s: model %+.1f %% vs native %+.1f %% "
                        "(+-%.1f)" % (b, a, 100 * p["model_effect"], 100 * p["effect"], 100 * half)}
        return {"pp": None, "how": "the native panel for %s has no pair %s/%s" % (profile, b, a)}
    rs = [rows[n]["ratio"] for n in shape[1:] if n in rows and rows[n].get("ratio")
          and rows[n].get("native_trusted")]
    if len(rs) < 2:
        return {"pp": None, "how": "the native panel for %s lacks trusted rows %s" % (
            profile, ", ".join(shape[1:]))}
    pp = 100 * (max(rs) / min(rs) - 1)
    return {"pp": pp, "how": "spread of the model/native ratios of panel rows %s: %.2f-%.2f" % (
        ", ".join(shape[1:]), min(rs), max(rs))}
