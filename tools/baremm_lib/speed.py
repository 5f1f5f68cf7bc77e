"""`tools/baremm model-speed`: what the cost model costs on the host (docs/COSTMODEL.md,
"Speed").

The same boot (one command line, one CPU count) under plain `-icount`, under the model
with the in-order core and with the out-of-order core, interleaved over rounds so that a
noisy neighbour slows every mode alike. Per boot: the host CPU time of QEMU (user + sys,
from the kernel's accounting of the waited child) and its wall time; the guest
instructions come from the model's own totals (BAREMM-MODEL-TOTAL, summed over vCPUs),
which plain -icount lacks: it runs the same guest code, so its MIPS use the in-order
boot's count. Figures: the minimum over rounds (the neighbours only add), its ratio to
plain -icount, and guest MIPS = instructions / host CPU seconds.
"""
import json
import os
import resource
import sys

from . import perfcheck, runner, status as st, table as tab

# (name, core argument or None for plain -icount)
MODES = (("icount", None), ("inorder", "core=inorder"), ("ooo", runner.OOO_ARGS))


class SpeedError(Exception):
    pass


def guest_insns(model_totals):
    """Guest instructions of a model boot: the sum over vCPUs of the BAREMM-MODEL-TOTAL
    lines the log parser read (logparse: parsed["model_totals"]); None when the plugin
    printed none."""
    per = {int(t["vcpu"]): int(t["insns"]) for t in model_totals}
    return sum(per.values()) if per else None


def _child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def summarise(samples):
    """{mode: {"cpu_s", "wall_s", "insns", "mips", "cpu_ratio", "wall_ratio"}} from
    samples [(mode, cpu_s, wall_s, insns or None)]: minima per mode, ratios to icount."""
    out = {}
    for mode, _ in MODES:
        mine = [s for s in samples if s[0] == mode]
        if not mine:
            continue
        ins = [s[3] for s in mine if s[3] is not None]
        out[mode] = {"cpu_s": min(s[1] for s in mine), "wall_s": min(s[2] for s in mine),
                     "insns": min(ins) if ins else None, "boots": len(mine)}
    ref = out.get("inorder", {}).get("insns")
    if "icount" in out and out["icount"]["insns"] is None:
        out["icount"]["insns"] = ref
    base = out.get("icount")
    for m in out.values():
        m["mips"] = m["insns"] / m["cpu_s"] / 1e6 if m["insns"] and m["cpu_s"] > 0 else None
        m["cpu_ratio"] = m["cpu_s"] / base["cpu_s"] if base and base["cpu_s"] > 0 else None
        m["wall_ratio"] = m["wall_s"] / base["wall_s"] if base and base["wall_s"] > 0 else None
    return out


HEAD = ["mode", "host CPU s (min)", "wall s (min)", "CPU vs icount", "guest insns",
        "guest MIPS", "boots"]


def _rows(summary):
    rows = []
    for mode, _ in MODES:
        m = summary.get(mode)
        if m is None:
            continue
        rows.append([mode, "%.2f" % m["cpu_s"], "%.2f" % m["wall_s"],
                     "%.2fx" % m["cpu_ratio"] if m["cpu_ratio"] else "-",
                     "%d" % m["insns"] if m["insns"] else "-",
                     "%.1f" % m["mips"] if m["mips"] else "-", str(m["boots"])])
    return rows


def table(summary, out=sys.stdout):
    out.write(tab.text(tab.columns(HEAD, left=(0,)), _rows(summary)))


def main(a):
    profile = runner.resolve_profile(a.profile)
    try:
        if not a.no_build:
            runner.build(model=True)
        top = a.out or runner.new_dir(os.path.join(runner.ROOT, "results"), "model-speed")
        os.makedirs(top, exist_ok=True)
        iso = perfcheck.private_iso(top)
        samples, saved_env = [], os.environ.get("BAREMM_MODEL_ARGS")
        try:
            for r in range(a.rounds):
                # rotate the order: no mode always boots first after an idle pause
                order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
                for mode, core in order:
                    if core is None:
                        os.environ.pop("BAREMM_MODEL_ARGS", None)
                    else:
                        os.environ["BAREMM_MODEL_ARGS"] = ",".join(
                            x for x in (saved_env, core) if x)
                    cfg = {"cmdline": a.cmdline, "smp": a.smp, "mem": a.mem, "cpu": "max",
                           "firmware": "bios", "accel": "tcg", "icount": True,
                           "model": profile if core else None, "timeout": a.timeout}
                    d = runner.new_dir(top, "%s-%d" % (mode, r))
                    c0 = _child_cpu()
                    rec, parsed = runner.boot(cfg, d, iso=iso, name=mode)
                    cpu = _child_cpu() - c0
                    if rec["status"] != "pass":
                        raise SpeedError("%s boot ended with status %s (see %s)"
                                         % (mode, rec["status"], d))
                    insns = guest_insns(parsed["model_totals"]) if core else None
                    if core and insns is None:
                        raise SpeedError("%s boot printed no BAREMM-MODEL-TOTAL (see %s)" % (mode, d))
                    samples.append((mode, cpu, rec["qemu"]["duration_s"], insns))
                    print("model-speed: round %d %-7s cpu %.2f s wall %.2f s%s" % (
                        r, mode, cpu, rec["qemu"]["duration_s"],
                        " insns %d" % insns if insns else ""), file=sys.stderr)
        finally:
            if saved_env is None:
                os.environ.pop("BAREMM_MODEL_ARGS", None)
            else:
                os.environ["BAREMM_MODEL_ARGS"] = saved_env
            perfcheck.remove_copy(iso)
    except (SpeedError, runner.ToolError) as e:
        sys.stderr.write("baremm model-speed: %s\n" % e)
        return st.EXIT_TOOL_ERROR
    s = summarise(samples)
    print("model-speed: profile %s, -smp %d, `%s`, %d rounds" % (
        a.profile, a.smp, a.cmdline, a.rounds))
    table(s)
    data = {"profile": a.profile, "smp": a.smp, "mem": a.mem, "cmdline": a.cmdline,
            "rounds": a.rounds, "samples": samples, "summary": s, "git": runner.git_info(),
            "host_cpus": os.cpu_count(), "host_cpu_name": runner.host_cpuinfo()["name"],
            "command": "tools/baremm model-speed --smp %d --mem %s --rounds %d --cmdline '%s' "
                       "--save docs/data" % (a.smp, a.mem, a.rounds, a.cmdline)}
    runner.write_json(os.path.join(top, "speed.json"), data)
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        runner.write_json(os.path.join(a.save, data_name(a.smp)), data)
    print("model-speed: %s" % os.path.relpath(top, runner.ROOT), file=sys.stderr)
    return 0


def data_name(smp):
    return "model-speed-%dcpu.json" % smp


def gen_doc_block(root, problems):
    """The generated block `model-speed` of docs/COSTMODEL.md: one table per saved
    measurement (docs/data/model-speed-<N>cpu.json)."""
    out = []
    for smp in (1, 16):
        path = os.path.join(root, "docs", "data", data_name(smp))
        if not os.path.exists(path):
            problems.append("%s: missing (run `tools/baremm model-speed --smp %d --save "
                            "docs/data`)" % (os.path.relpath(path, root), smp))
            out.append("**%d CPU%s**: not measured." % (smp, "" if smp == 1 else "s"))
            continue
        with open(path) as f:
            d = json.load(f)
        g = d.get("git") or {}
        if g.get("dirty"):
            problems.append("%s: from a dirty tree" % os.path.relpath(path, root))
        out.append("**%d CPU%s**, profile %s, `%s`, %d rounds, build `%s`%s, host %s (%d "
                   "CPUs). Command: `%s`." % (
                       smp, "" if smp == 1 else "s", d["profile"], d["cmdline"], d["rounds"],
                       (g.get("rev") or "")[:12], " (dirty tree)" if g.get("dirty") else "",
                       d.get("host_cpu_name", "?"), d.get("host_cpus", 0), d.get("command", "?")))
        out.append(tab.markdown(tab.columns(HEAD, left=(0,)), _rows(d["summary"])))
    return "\n\n".join(out)


def add_parser(sub):
    p = sub.add_parser("model-speed", help="host CPU time and guest MIPS of one boot under "
                       "plain -icount and the model's two cores (docs/COSTMODEL.md)")
    p.add_argument("--profile", default="skylake-sp")
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--mem", default="512M")
    p.add_argument("--cmdline", default="bench=alloc.*")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", help="output directory (default results/model-speed-<n>)")
    p.add_argument("--save", metavar="DIR", help="also write DIR/model-speed-<N>cpu.json "
                   "(docs/data: docs/COSTMODEL.md's speed tables)")
    p.add_argument("--no-build", action="store_true")
    p.set_defaults(func=main)
