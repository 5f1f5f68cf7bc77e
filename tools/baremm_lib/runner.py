"""Boot the baremm ISO in QEMU, capture the serial log, build run.json."""
import datetime
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time

from . import logparse, status as st

# QEMU and the UEFI firmware of the user's choice (README.md, "Hosts and QEMU")
QEMU = os.environ.get("BAREMM_QEMU") or "qemu-system-x86_64"
OVMF_CODE = os.environ.get("BAREMM_OVMF_CODE") or "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = os.environ.get("BAREMM_OVMF_VARS") or "/usr/share/OVMF/OVMF_VARS_4M.fd"
ICOUNT = "shift=0,sleep=off,align=off"
ISO = "build/baremm-qemu.iso"   # iso/baremm.iso without the GRUB menu wait (Makefile)
USB_ISO = "iso/baremm.iso"
# The same ISO with a kernel that checks its contracts (make DEBUG_CONTRACTS=1, kernel/assert.h)
CONTRACTS_ISO = "build/contracts/baremm-qemu.iso"
KERNEL_ISOS = {"default": ISO, "contracts": CONTRACTS_ISO}
# The kernel as a flat image for QEMU's multiboot (v1) loader (Makefile, boot/multiboot1.asm).
# `boot=direct` loads it with -kernel: no firmware disk I/O and no GRUB, so the guest's
# instruction count at kernel entry is the same on every boot however busy the host is
# (under -icount the firmware's polling of the CD-ROM follows the host's I/O timing, and
# with it the model's warm state and QEMU's round-robin phase). `boot=grub` boots the ISO.
BIN_NAME = "baremm.bin"
BOOT_MODES = ("grub", "direct")
SCHEMA = "baremm-run/1"
# The cycle-cost model (docs/COSTMODEL.md): a TCG plugin and its named CPU profiles.
MODEL_SO = "build/model/costmodel.so"
PROFILE_DIR = "model/profiles"
# The profile of this host, written by `tools/baremm calibrate` (not a published CPU, so
# not in PROFILE_DIR); `--model host` names it.
HOST_PROFILE = "host"
HOST_PROFILE_PATH = "results/host.cfg"

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


_live = set()
_live_lock = threading.Lock()


def kill_all():
    """Stop every QEMU this process started (used on Ctrl-C)."""
    with _live_lock:
        procs = list(_live)
    for p in procs:
        _stop(p)


class ToolError(Exception):
    """The tool cannot do what was asked (missing QEMU, firmware, bad option combination)."""


def kvm_usable():
    return os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)


def resolve_accel(accel, icount=False):
    if accel == "auto":
        accel = "kvm" if kvm_usable() and not icount else "tcg"
    if accel == "kvm":
        if not kvm_usable():
            raise ToolError("--accel kvm: /dev/kvm is missing or not accessible")
        if icount:
            raise ToolError("--icount needs TCG (instruction counting is not available "
                            "with KVM)")
    elif accel not in ("tcg", "tcg-single", "tcg-multi"):
        raise ToolError("unknown accelerator %r (tcg, tcg-single, tcg-multi, kvm or auto)" % accel)
    return accel


def accel_arg(accel, smp, icount):
    """QEMU -accel value. Plain 'tcg' picks the threading: with more vCPUs than host cores,
    multi-threaded TCG lets spinning vCPUs starve the others (a cross-CPU call test took
    45 s at -smp 4 on 2 cores, 0.13 s round-robin), so it runs the vCPUs round-robin on
    one thread (where `pause` hands over to the next vCPU). icount is always single."""
    if accel == "tcg-single" or (accel == "tcg" and not icount and smp > (os.cpu_count() or 1)):
        return "tcg,thread=single"
    if accel == "tcg-multi":
        return "tcg,thread=multi"
    return accel


def model_profiles(root=None):
    """Names of the profiles in model/profiles/ (NAME.cfg)."""
    d = os.path.join(root or ROOT, PROFILE_DIR)
    try:
        return sorted(f[:-4] for f in os.listdir(d) if f.endswith(".cfg"))
    except OSError:
        return []


class NotCalibrated(ToolError):
    """--model host before `tools/baremm calibrate` has written the host's profile."""


def host_profile_path():
    return os.path.join(ROOT, HOST_PROFILE_PATH)


def resolve_profile(name):
    """A profile name (model/profiles/NAME.cfg), 'host' (the calibrated profile of this
    machine) or a path to a profile file."""
    if name == HOST_PROFILE and not os.path.isfile(os.path.join(ROOT, PROFILE_DIR, name + ".cfg")):
        path = host_profile_path()
        if not os.path.isfile(path):
            raise NotCalibrated("--model host: this host has not been calibrated (%s is "
                                "missing): run `tools/baremm calibrate` first" % HOST_PROFILE_PATH)
        return path
    if os.sep in name or name.endswith(".cfg"):
        path = os.path.abspath(name)
    else:
        path = os.path.join(ROOT, PROFILE_DIR, name + ".cfg")
    if not os.path.isfile(path):
        raise ToolError("unknown cost-model profile %r (profiles: %s; or give a path to a "
                        "profile file)" % (name, ", ".join(model_profiles()) or "none found"))
    return path


def model_plugin_args(profile, model_args=None):
    """The -plugin argument for a cost-model run; the plugin must have been built.
    @model_args: further plugin arguments (e.g. causal=off, core=ooo; docs/COSTMODEL.md),
    default BAREMM_MODEL_ARGS."""
    so = os.path.join(ROOT, MODEL_SO)
    if not os.path.isfile(so):
        raise ToolError("%s is missing: build it with `make` (the cost-model plugin)" % MODEL_SO)
    arg = "%s,profile=%s" % (qemu_arg_path(so), qemu_arg_path(resolve_profile(profile)))
    extra = os.environ.get("BAREMM_MODEL_ARGS") if model_args is None else model_args
    return ["-plugin", arg + ("," + extra if extra else "")]


# the plugin argument of the out-of-order core (docs/COSTMODEL.md)
OOO_ARGS = "core=ooo"


def core_ooo(model_args):
    """Do these plugin arguments (BAREMM_MODEL_ARGS) select the out-of-order core?"""
    return OOO_ARGS in (model_args or "").split(",")


def host_cpuinfo():
    """{"id": "vendor family model stepping" (decimal, as /proc/cpuinfo prints them),
    "name": the model name} of CPU 0; "?" for what cannot be read."""
    want = ("vendor_id", "cpu family", "model", "stepping", "model name")
    got = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k in want and k not in got:
                    got[k] = v.strip()
                if not line.strip() and got:
                    break
    except OSError:
        pass
    return {"id": " ".join(got.get(k, "?") for k in want[:4]), "name": got.get("model name", "?")}


def qemu_arg_path(p):
    """QEMU option values escape ',' by doubling it."""
    return p.replace(",", ",,")


def boot_mode(cfg):
    """cfg's `boot`, or its default: `direct` for the deterministic modes (-icount, the
    cost model) under SeaBIOS without a screen check, `grub` otherwise. QEMU's -kernel
    loader needs the BIOS and gives no framebuffer, so those refuse `direct`."""
    icount = bool(cfg.get("icount") or cfg.get("model"))
    bios = cfg.get("firmware", "bios") == "bios"
    screen = bool(cfg.get("qmp_socket") or cfg.get("screendump"))
    mode = cfg.get("boot")
    if mode is None:
        return "direct" if icount and bios and not screen else "grub"
    if mode not in BOOT_MODES:
        raise ToolError("unknown boot %r (%s)" % (mode, " or ".join(BOOT_MODES)))
    if mode == "direct" and not bios:
        raise ToolError("boot=direct needs firmware=bios (QEMU's multiboot loader is a "
                        "SeaBIOS option ROM); UEFI boots go through GRUB")
    if mode == "direct" and screen:
        raise ToolError("boot=direct has no framebuffer for a screen check: use boot=grub")
    return mode


def direct_image(iso):
    """The flat kernel image that goes with @iso: NAME.bin beside NAME.iso (a private
    copy, perfcheck.private_iso), else baremm.bin in the ISO's directory (the build's)."""
    own = os.path.splitext(iso)[0] + ".bin"
    if os.path.isfile(own):
        return own
    return os.path.join(os.path.dirname(iso), BIN_NAME)


def build_command(cfg, workdir, iso=None, qemu=QEMU):
    """cfg keys: cmdline (None = GRUB's line), smp, mem, cpu, firmware, accel, icount,
    model (a cost-model profile: implies icount, loads the plugin), boot (boot_mode()).

    Writes the fw_cfg command-line file and the OVMF variable store copy into workdir.
    Returns the argv list.
    """
    iso = os.path.abspath(iso or os.path.join(ROOT, ISO))
    icount = bool(cfg.get("icount") or cfg.get("model"))
    accel = resolve_accel(cfg.get("accel", "tcg"), icount)
    if boot_mode(cfg) == "direct":
        image = direct_image(iso)
        if not os.path.isfile(image):
            raise ToolError("%s does not exist: build it with `make` (boot=direct loads the "
                            "flat kernel image)" % image)
        media = ["-kernel", image]
    else:
        media = ["-cdrom", iso, "-boot", "d"]
    argv = [qemu, "-machine", "q35"] + media + [
            "-nographic", "-monitor", "none", "-serial", "stdio", "-no-reboot", "-nic", "none",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-smp", str(cfg.get("smp", 1)), "-m", str(cfg.get("mem", "512M")),
            "-cpu", cfg.get("cpu", "max"),
            "-accel", accel_arg(accel, int(cfg.get("smp", 1)), icount)]
    if icount:
        argv += ["-icount", ICOUNT]
    if cfg.get("model"):
        argv += model_plugin_args(cfg["model"])
    if cfg.get("firmware", "bios") == "uefi":
        for f in (OVMF_CODE, OVMF_VARS):
            if not os.path.exists(f):
                raise ToolError("UEFI boot needs %s (Debian package ovmf; or set "
                                "BAREMM_OVMF_CODE and BAREMM_OVMF_VARS)" % f)
        vars_copy = os.path.join(workdir, "ovmf_vars.fd")
        shutil.copyfile(OVMF_VARS, vars_copy)
        argv += ["-drive", "if=pflash,format=raw,readonly=on,file=" + qemu_arg_path(OVMF_CODE),
                 "-drive", "if=pflash,format=raw,file=" + qemu_arg_path(vars_copy)]
    elif cfg.get("firmware", "bios") != "bios":
        raise ToolError("unknown firmware %r (bios or uefi)" % cfg.get("firmware"))
    if cfg.get("qmp_socket"):
        # the screen check (screendump=): the guest's exit request pauses the machine, the
        # host takes the screendump over QMP and then quits (QEMU keeps the guest's exit
        # code). wait=on: the guest starts only once the host is connected.
        argv += ["-qmp", "unix:%s,server=on,wait=on" % qemu_arg_path(cfg["qmp_socket"]),
                 "-action", "shutdown=pause"]
    if cfg.get("cmdline") is not None:
        path = os.path.join(workdir, "cmdline.txt")
        with open(path, "w") as f:
            f.write(cfg["cmdline"])
        argv += ["-fw_cfg", "name=opt/baremm/cmdline,file=" + qemu_arg_path(path)]
    return argv


class LineEcho:
    """Echo serial bytes as cleaned text lines (no firmware escape sequences)."""

    # Echo starts at the kernel's banner (`baremm ...`) or its first tagged line; firmware
    # and GRUB menus are only in serial.log.
    START_RE = re.compile(r"^baremm\b|" + logparse.KERNEL_START_RE.pattern[1:])

    def __init__(self, out, prefix="", from_kernel=True):
        self.out = out
        self.prefix = prefix
        self.buf = b""
        self.started = not from_kernel

    def feed(self, data):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self._emit(line)

    def flush(self):
        if self.buf:
            self._emit(self.buf)
            self.buf = b""

    def _emit(self, raw):
        text = logparse.clean_line(raw.decode("utf-8", errors="replace"))
        if not self.started:
            m = self.START_RE.search(text) or logparse.GLUED_RE.search(text)
            if not m:
                return
            self.started = True
            text = text[m.start():]
        if text.strip():
            self.out.write(self.prefix + text + "\n")
            self.out.flush()


class ScreenDump:
    """The QMP client of a screen-check boot (build_command's qmp_socket): connect, wait
    for the guest's exit request (QEMU pauses, -action shutdown=pause), save the screen as
    PPM, quit. Every failure stops QEMU at once: a paused machine would otherwise wait for
    the host timeout. Runs in its own thread; .error says what went wrong."""

    def __init__(self, sock_path, ppm_path):
        self.sock_path = sock_path
        self.ppm_path = ppm_path
        self.error = None
        self.taken = False

    def run(self, p, deadline):
        import json
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            while True:     # QEMU creates the socket shortly after it starts
                try:
                    sock.connect(self.sock_path)
                    break
                except (FileNotFoundError, ConnectionRefusedError):
                    if p.poll() is not None or time.monotonic() > deadline:
                        raise OSError("QEMU's QMP socket never accepted a connection")
                    time.sleep(0.05)
            sock.settimeout(max(1.0, deadline - time.monotonic()))
            f = sock.makefile("rwb")

            def receive():
                line = f.readline()
                if not line:
                    raise EOFError
                return json.loads(line)

            def execute(cmd, **args):
                f.write(json.dumps({"execute": cmd, "arguments": args}).encode() + b"\n")
                f.flush()
                while True:
                    r = receive()
                    if "error" in r:
                        raise OSError("QMP %s: %s" % (cmd, r["error"].get("desc", r["error"])))
                    if "return" in r:
                        return r["return"]

            receive()   # the greeting
            execute("qmp_capabilities")
            while True:
                ev = receive()
                if ev.get("event") == "SHUTDOWN":
                    break
            execute("screendump", filename=self.ppm_path, format="ppm")
            self.taken = True
            execute("quit")
        except (EOFError, ConnectionResetError, BrokenPipeError):
            # QEMU went away first (host timeout, or it could not start)
            if p.poll() is None:
                self.error = "QMP connection closed before the screendump"
        except (OSError, ValueError) as e:
            self.error = "screendump: %s" % e
        finally:
            sock.close()
        if self.error or not self.taken:
            _stop(p)


def run_qemu(argv, log_path, timeout, echo=None, stderr_path=None, screendump=None):
    """Run QEMU with its standard output (the serial port, `-serial stdio`) written
    straight to log_path, echo the file as it grows, kill QEMU after timeout s.

    A file, not a pipe: QEMU makes its stdio chardev non-blocking, and when a pipe is full
    (this reader late on a loaded host) the UART keeps the byte until QEMU's main loop
    can write it; the guest's transmit-ready poll then runs as long as the host makes it,
    and host timing leaks into guest instruction counts. A regular file never returns
    EAGAIN (docs/OUTPUT.md section 7).

    Returns dict(exit_code, timed_out, duration_s, stderr).
    """
    start = time.monotonic()
    log_out = open(log_path, "wb")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_out,
                             stderr=subprocess.PIPE, start_new_session=True, cwd=ROOT)
    except FileNotFoundError:
        raise ToolError("%s not found (run tools/install-deps.sh, or set BAREMM_QEMU to a "
                        "qemu-system-x86_64)" % argv[0])
    finally:
        log_out.close()
    with _live_lock:
        _live.add(p)
    err_chunks = []

    def pump_out():
        """Follow the log until QEMU has exited and everything is read."""
        with open(log_path, "rb") as log:
            while True:
                done = p.poll() is not None
                data = log.read(65536)
                if data:
                    if echo:
                        echo.feed(data)
                elif done:
                    break
                else:
                    time.sleep(0.05)
        if echo:
            echo.flush()

    def pump_err():
        for chunk in iter(lambda: p.stderr.read(4096), b""):
            err_chunks.append(chunk)

    t_out = threading.Thread(target=pump_out, daemon=True)
    t_err = threading.Thread(target=pump_err, daemon=True)
    t_out.start()
    t_err.start()
    t_qmp = None
    if screendump:
        t_qmp = threading.Thread(target=screendump.run, args=(p, start + timeout), daemon=True)
        t_qmp.start()
    timed_out = False
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop(p)
    except BaseException:
        _stop(p)
        raise
    finally:
        with _live_lock:
            _live.discard(p)
    t_out.join(10)
    t_err.join(10)
    if t_qmp:
        t_qmp.join(10)
    stderr = b"".join(err_chunks).decode("utf-8", errors="replace")
    if stderr_path:
        with open(stderr_path, "w") as f:
            f.write(stderr)
    return {"exit_code": p.returncode, "timed_out": timed_out,
            "duration_s": round(time.monotonic() - start, 3), "stderr": stderr}


def _stop(p):
    if p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


_qemu_version = None


def qemu_version(qemu=QEMU):
    global _qemu_version
    if _qemu_version is None:
        try:
            out = subprocess.run([qemu, "--version"], capture_output=True, text=True).stdout
            _qemu_version = out.splitlines()[0] if out else "unknown"
        except OSError:
            _qemu_version = "missing"
    return _qemu_version


# Where the tools save what they record (--save docs/data, perf-check --update, plots):
# a change there is a recording's output, not a change of the code that records.
RECORDED_DATA = ("docs/data/", "docs/img/", "tests/perf/baseline")


def git_info(root=ROOT):
    """The revision a figure was made from, and whether the tracked code differs from it
    (untracked files and the recorded data of RECORDED_DATA do not count: two recordings
    saved one after the other in one checkout are both of the same code)."""
    def git(*args):
        r = subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None
    rev = git("rev-parse", "HEAD")
    if rev is None:
        return {"rev": None, "dirty": None}
    porcelain = git("status", "--porcelain", "--untracked-files=no") or ""
    changed = [line[3:] for line in porcelain.splitlines() if line.strip()]
    return {"rev": rev.strip(), "dirty": any(not p.startswith(RECORDED_DATA) for p in changed)}


def build(root=ROOT, quiet=False, model=False):
    """`make -s iso/baremm.iso build/baremm-qemu.iso` (and the cost-model plugin with
    model=True); raises ToolError on failure."""
    targets = [USB_ISO, ISO, os.path.join("build", BIN_NAME)] + ([MODEL_SO] if model else [])
    r = subprocess.run(["make", "-s"] + targets, cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise ToolError("build failed (make -s %s, exit %d):\n%s%s"
                        % (ISO, r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
    if not quiet and (r.stdout.strip() or r.stderr.strip()):
        sys.stderr.write(r.stdout + r.stderr)


def build_contracts(root=ROOT):
    """`make -s DEBUG_CONTRACTS=1 build/contracts/baremm-qemu.iso`; raises ToolError."""
    r = subprocess.run(["make", "-s", "DEBUG_CONTRACTS=1", CONTRACTS_ISO,
                        os.path.join(os.path.dirname(CONTRACTS_ISO), BIN_NAME)], cwd=root,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ToolError("build failed (make -s DEBUG_CONTRACTS=1 %s, exit %d):\n%s%s"
                        % (CONTRACTS_ISO, r.returncode, r.stdout[-4000:], r.stderr[-4000:]))


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name or "run").strip("_") or "run"


def timestamp():
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def new_dir(base, name):
    """A new directory base/name, else base/name-2, -3, ...: created, not just looked for,
    so two tools started in the same second (names from timestamp()) never share one."""
    os.makedirs(base, exist_ok=True)
    d, i = os.path.join(base, name), 2
    while True:
        try:
            os.mkdir(d)
            return d
        except FileExistsError:
            d = os.path.join(base, "%s-%d" % (name, i))
            i += 1


def boot(cfg, outdir, echo=None, iso=None, name="run"):
    """Boot once with cfg; write serial.log, qemu.stderr and run.json into outdir.

    Returns (record, parsed) where record is the run.json content.
    """
    log_path = os.path.join(outdir, "serial.log")
    path = os.path.abspath(iso or os.path.join(ROOT, ISO))
    if not os.path.isfile(path):
        # not "log is truncated" after QEMU failed to open it
        raise ToolError("%s does not exist: build it with `make` (or run without --no-build), "
                        "or name another with --iso" % path)
    dump = qmp_dir = None
    if cfg.get("screendump"):
        import tempfile
        # a short path: a unix socket's name is limited to 107 bytes
        qmp_dir = tempfile.mkdtemp(prefix="baremm-qmp-")
        cfg = dict(cfg, qmp_socket=os.path.join(qmp_dir, "qmp.sock"))
        dump = ScreenDump(cfg["qmp_socket"], os.path.abspath(os.path.join(outdir, "screen.ppm")))
    try:
        argv = build_command(cfg, outdir, iso=iso)
        started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        q = run_qemu(argv, log_path, cfg.get("timeout", 300), echo=echo,
                     stderr_path=os.path.join(outdir, "qemu.stderr"), screendump=dump)
    finally:
        if qmp_dir:
            shutil.rmtree(qmp_dir, ignore_errors=True)
    if dump:
        q["screendump"] = {"path": "screen.ppm" if dump.taken else None, "error": dump.error}
    if cfg.get("model") and q["exit_code"] not in st.QEMU_CODES and "plugin" in q["stderr"]:
        raise ToolError("QEMU could not run the cost-model plugin (QEMU built without TCG "
                        "plugins, or too old: plugin API 2..4 is needed, QEMU >= 9):\n%s"
                        % q["stderr"].strip()[-2000:])
    vars_copy = os.path.join(outdir, "ovmf_vars.fd")
    if os.path.exists(vars_copy):
        os.unlink(vars_copy)
    parsed = logparse.parse_file(log_path)
    record = make_record(cfg, argv, q, parsed, name=name, started=started)
    write_json(os.path.join(outdir, "run.json"), record)
    return record, parsed


def make_record(cfg, argv, q, parsed, name="run", started=None):
    status = st.qemu_exit_to_status(q["exit_code"], q["timed_out"])
    warnings = list(parsed["warnings"])
    if parsed["end"] and status in st.KERNEL_CODES and parsed["end"]["status"] != status:
        warnings.append({"line": parsed["end"]["line"], "message":
                         "BAREMM-END status=%s but QEMU exit code %s means %s"
                         % (parsed["end"]["status"], q["exit_code"], status)})
    k = parsed["ktap"]
    if status == "pass" and k["counted"]["fail"]:
        warnings.append({"line": None, "message": "kernel exited with pass but KTAP reports "
                         "%d failures" % k["counted"]["fail"]})
    exit_status = st.tool_exit(status)
    if status == "pass" and parsed["errors"]:
        exit_status = st.EXIT_LOG_ERROR
    cfg_out = {k2: cfg.get(k2) for k2 in ("cmdline", "smp", "mem", "cpu", "firmware", "accel",
                                          "icount", "model", "timeout")}
    cfg_out["boot"] = "direct" if "-kernel" in argv else "grub"
    cfg_out["accel_used"] = argv[argv.index("-accel") + 1] if "-accel" in argv else None
    return {
        "schema": SCHEMA,
        "name": name,
        "started": started,
        "host": {"hostname": socket.gethostname(), "nproc": os.cpu_count(),
                 "qemu_version": qemu_version(argv[0])},
        "git": git_info(),
        "config": cfg_out,
        "qemu": {"argv": argv, "command": " ".join(shlex.quote(a) for a in argv),
                 "cwd": ROOT, "exit_code": q["exit_code"], "timed_out": q["timed_out"],
                 "duration_s": q["duration_s"], "stderr": q["stderr"][-4000:],
                 "screendump": q.get("screendump")},
        "status": status,
        "tool_exit": exit_status,
        "log": {"path": "serial.log", "lines": parsed["lines"],
                "kernel_start_line": parsed["kernel_start_line"],
                "truncated": parsed["truncated"], "errors": parsed["errors"],
                "warnings": warnings},
        "machine": parsed["machine"],
        "end": parsed["end"],
        "ktap": _ktap_summary(k),
        "mode": run_mode(cfg, parsed),
        "model": parsed["model"],
        "results": parsed["results"],
        "icount_results": parsed["icount_results"],
        "info": parsed["info"],
        "panics": parsed["panics"],
        "option_errors": parsed["option_errors"],
        "kernel_errors": parsed["kernel_errors"],
    }


def run_mode(cfg, parsed):
    """The measurement mode of a run: tcg (wall time), icount (instructions) or model
    (cost-model cycles). A saved log says model by its BAREMM-MODEL line; icount vs tcg
    then comes from the machine line's tsc_khz (icount shift=0 gives exactly 1 GHz)."""
    if parsed.get("mode") == "model":
        return "model"
    if cfg is not None:
        return "icount" if cfg.get("icount") else "tcg"
    m = parsed.get("machine") or {}
    return "icount" if m.get("tsc_khz") == 1000000 else "tcg" if m else None


def _ktap_summary(k):
    d = dict(k)
    return d


def write_json(path, obj):
    import json
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(path + ".tmp", path)


def record_from_log(path, name=None):
    """A run.json-shaped record for a saved log (no QEMU information)."""
    parsed = logparse.parse_file(path)
    status = parsed["status"]
    exit_status = st.tool_exit(status)
    if parsed["errors"]:
        exit_status = st.EXIT_LOG_ERROR if status in ("pass", "no_status") else exit_status
    return {
        "schema": SCHEMA, "name": name or os.path.basename(path), "started": None,
        "host": None, "git": None, "config": None, "qemu": None,
        "status": status, "tool_exit": exit_status,
        "log": {"path": path, "lines": parsed["lines"],
                "kernel_start_line": parsed["kernel_start_line"],
                "truncated": parsed["truncated"], "errors": parsed["errors"],
                "warnings": parsed["warnings"]},
        "machine": parsed["machine"], "end": parsed["end"], "ktap": parsed["ktap"],
        "mode": run_mode(None, parsed), "model": parsed["model"],
        "results": parsed["results"], "icount_results": parsed["icount_results"], "info": parsed["info"], "panics": parsed["panics"],
        "option_errors": parsed["option_errors"], "kernel_errors": parsed["kernel_errors"],
    }, parsed
