"""Configure and build one kernel (kernels.KernelId): upstream or checkpoint N.

Each kernel has its own object folder, build/obj/<name> (its
kernels.KernelId name: upstream, cp0, cp1, cp7-debug ...). A checkpoint's folder starts as a copy of the previous
checkpoint's, so building checkpoint N after N-1 compiles only what the
checkpoint's patches changed. ccache catches what is left.
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import threading

from . import interrupt, kernels, series, tree, ui
from .errors import HarnessError

# What the link leaves in an object folder that nothing reads once
# vmlinux and bzImage are made: the relocatable vmlinux.o, the kallsyms
# passes' .tmp_vmlinux*, and the raw image bzImage is compressed from.
# They are more than a third of a built kernel's folder (about 80 of 210
# MB on 6.12's lab kernel, 160 of 397 on its debug kernel); make writes
# them again whenever it links.
LINK_LEFTOVERS = ("vmlinux.o", ".tmp_vmlinux*", "arch/x86/boot/compressed/vmlinux.bin")

# The fragment every kernel starts from; a variant's go on top of it
# (kernels.VARIANTS).
CONFIG_FRAGMENT = kernels.CONFIG_FRAGMENT

# Full debug info (types, variables, arguments) only in kernel/: the
# tracing code and every structure the labs read (and what lx-ps,
# lx-dmesg and lx-lsmod read), and in the objects that hold the structures
# the kernel's gdb scripts look up when they load: fs/proc_namespace.o for
# fs/'s private struct mount (linux/proc.py), and, in 6.12's scripts,
# mm/vmalloc.o for struct vmap_area (linux/vmalloc.py) and mm/slub.o for
# mm/'s private struct slab, struct kmem_cache and struct track
# (linux/slab.py, with SLUB_DEBUG: the debug kernels). Without one they
# stop loading there, with a Python traceback, leaving out the lx-
# commands of the modules after it. Every
# other object (arch/, drivers/, fs/, lib/, mm/ ...: three quarters of a
# lab kernel) gets -g1: functions, inlined calls and line tables, enough
# for a backtrace through it or a breakpoint in it, for about a tenth less
# compiler time per object.
FULL_DEBUG_INFO = ("kernel/%.o", "fs/proc_namespace.o", "mm/vmalloc.o", "mm/slub.o")
# Two variables given to every sub-make of kbuild by make's --eval, so
# that kbuild sees the flags in the objects' command lines (and rebuilds
# them when this list changes). Every object gets -g1 (a pattern-specific
# variable); those above get -g after it (make applies the pattern with
# the shorter stem, and a target's own variable, last), and the last -g
# option wins. (Plain text only: a "$@" in the value is expanded before
# kbuild sets it.)
DEBUG_INFO_FLAGS = ["--eval=%.o: KBUILD_CFLAGS += -g1",
                    "--eval=" + " ".join(FULL_DEBUG_INFO) + ": KBUILD_CFLAGS += -g"]


class BuildError(HarnessError):
    pass


def compiled_objects(log):
    """The objects a build has made so far: CC, LD and AR lines of its log."""
    try:
        with open(log, errors="replace") as f:
            return sum(1 for l in f if l.lstrip().startswith(("CC ", "LD ", "AR ")))
    except OSError:
        return 0


def wanted_options(fragment=CONFIG_FRAGMENT):
    """{'CONFIG_X': 'y' or 'n'} from the fragment's set and 'is not set' lines."""
    want = {}
    with open(fragment, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
            if m:
                want[m.group(1)] = m.group(2)
            m = re.match(r"^# (CONFIG_\w+) is not set$", line.strip())
            if m:
                want[m.group(1)] = "n"
    return want


def config_problems(config_text, want):
    """Options of the fragment that the final .config does not have."""
    have = {}
    for line in config_text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line)
        if m:
            have[m.group(1)] = m.group(2)
    bad = []
    for opt, val in want.items():
        got = have.get(opt, "n")
        if got != val:
            bad.append(f"{opt}: wanted {'not set' if val == 'n' else val}, "
                       f"got {'not set' if got == 'n' else got}")
    return bad


def relocate_tool_records(tree, old, new):
    """Host tools (objtool) record their absolute output paths in their
    .cmd/.d files. In a copied object folder those name the old folder, so
    make would rebuild objtool, and every object depends on objtool: a full
    rebuild. Point the records at the new folder, keeping their times."""
    tools = os.path.join(tree, "tools")
    for top, _dirs, files in os.walk(tools):
        for name in files:
            if not name.startswith(".") or not name.endswith((".cmd", ".d")):
                continue
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                data = f.read()
            if old.encode() not in data:
                continue
            st = os.stat(path)
            with open(path, "wb") as f:
                f.write(data.replace(old.encode(), new.encode()))
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def make_env(environ=None):
    """The environment of the kernel's make: ours, without what the front
    door's make passes down. make puts the variables of its command line
    in MAKEFLAGS (after " -- ") and in the environment; the kernel's
    tools read some of them: DEBUG=1 (make lab N DEBUG=1, make mutants N
    DEBUG=1) builds libsubcmd with -O0, a new objtool, and every object
    depends on objtool. A plain kernel's folder then rebuilt whole each
    time a run with DEBUG=1 and one without took turns."""
    environ = os.environ if environ is None else environ
    _flags, _sep, overrides = environ.get("MAKEFLAGS", "").partition(" -- ")
    drop = {"MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"}
    drop |= {word.split("=", 1)[0] for word in overrides.split() if "=" in word}
    return {k: v for k, v in environ.items() if k not in drop}


def passed_on(environ=None):
    """The front door's variables the kernel's make still gets, on its
    command line: V= (make lab N V=1 shows the compiler's commands in
    the build log too)."""
    environ = os.environ if environ is None else environ
    _flags, _sep, overrides = environ.get("MAKEFLAGS", "").partition(" -- ")
    return [word for word in overrides.split() if word.startswith("V=")]


class Kernel:
    """The build of one kernel (a kernels.KernelId): its configuration
    (lab.config and its variant's fragments), make flags and targets, its
    object folder build/obj/<name>, log and stamp. Everything about which
    kernel it is, k.id answers."""

    def __init__(self, build_dir, kid):
        self.id = kid
        spec = kid.spec
        self.name = kid.name
        self.label = kid.label
        self.debug = kid.debug
        self.smp = spec.smp
        self.warn_panics = spec.warn_panics
        self.fragments = [CONFIG_FRAGMENT] + list(spec.fragments)
        self.targets = ["bzImage", "scripts_gdb"] + (["modules"] if spec.modules else [])
        self.make_flags = DEBUG_INFO_FLAGS + list(spec.flags)
        self.build_dir = build_dir
        self.obj = os.path.join(build_dir, "obj", self.name)
        self.bzimage = os.path.join(self.obj, "arch", "x86", "boot", "bzImage")
        self.vmlinux = os.path.join(self.obj, "vmlinux")
        self.log = os.path.join(build_dir, "logs", f"build-{self.name}.log")
        self.stamp = os.path.join(self.obj, ".ftlab-built")

    def built(self):
        return os.path.exists(self.bzimage) and os.path.exists(self.stamp)

    def _make(self, src, *targets, log=None):
        env = make_env()
        # ccache keeps its cache where it does by default (per user, in
        # ~/.cache/ccache), so that every clone of the labs shares it. Paths
        # are hashed relative to the build folder, and not the object
        # folder's own name: any clone's build/obj/cpN hits what another
        # clone compiled.
        env.setdefault("CCACHE_BASEDIR", self.build_dir)
        env.setdefault("CCACHE_NOHASHDIR", "1")
        env.setdefault("KBUILD_BUILD_TIMESTAMP", "ftrace-labs")
        env.setdefault("KBUILD_BUILD_USER", "lab")
        env.setdefault("KBUILD_BUILD_HOST", "ftrace-labs")
        cc = "ccache gcc" if shutil.which("ccache") else "gcc"
        cmd = ["make", "-C", src, f"O={self.obj}", "ARCH=x86_64", f"CC={cc}",
               *self.make_flags, *passed_on(),
               f"-j{(os.cpu_count() or 2) + 1}"] + list(targets)
        out = open(log, "a") if log else subprocess.DEVNULL
        try:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        finally:
            if log:
                out.close()

    def _run_make(self, src, *targets):
        p = self._make(src, *targets, log=self.log)
        if wait(p) != 0:
            raise BuildError(self._failure(f"make {' '.join(targets)} failed"))

    def _failure(self, what):
        with open(self.log, errors="replace") as f:
            lines = f.readlines()
        errs = [l for l in lines if re.search(r"error:|Error \d|\*\*\*", l)]
        tail = (errs[:15] or lines[-25:])
        return what + ":\n" + "".join("    | " + l for l in tail) + f"full log: {self.log}"

    def seed(self, previous_obj):
        """Start this object folder as a copy of another checkpoint's."""
        if os.path.isdir(self.obj) or not previous_obj or not os.path.isdir(previous_obj):
            return
        ui.step(f"starting {self.name}'s object folder from {os.path.basename(previous_obj)}'s")
        os.makedirs(os.path.dirname(self.obj), exist_ok=True)
        r = subprocess.run(["cp", "-a", "--reflink=auto", previous_obj, self.obj],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"copying {previous_obj} to {self.obj} failed: {r.stderr.strip()}")
        relocate_tool_records(self.obj, previous_obj, self.obj)
        for stale in (self.stamp, os.path.join(self.obj, ".ftlab-config")):
            if os.path.exists(stale):
                os.unlink(stale)

    def config_digest(self):
        """What the configuration is made of: the fragments' text."""
        h = hashlib.sha256()
        for fragment in self.fragments:
            with open(fragment, "rb") as f:
                h.update(f.read())
        return h.hexdigest()

    def configure(self, src):
        """tinyconfig + the fragments (scripts/lab.config, and debug.config
        or kcsan.config for a variant), then check that every option stuck."""
        digest = self.config_digest()
        cfg_stamp = os.path.join(self.obj, ".ftlab-config")
        if os.path.exists(cfg_stamp) and open(cfg_stamp).read() == digest:
            return
        names = " + ".join(os.path.relpath(f, series.ROOT) for f in self.fragments)
        ui.step(f"configuring {self.label}: tinyconfig + {names}")
        os.makedirs(self.obj, exist_ok=True)
        # "make tinyconfig" is allnoconfig with tiny-base.config, then the
        # tiny.config fragments merged and olddefconfig. Ours join that
        # merge: the same .config, with one Kconfig run (seconds) fewer.
        self._run_make(src, "allnoconfig", "KCONFIG_ALLCONFIG="
                       + os.path.join(src, "kernel", "configs", "tiny-base.config"))
        tiny = [os.path.join(src, "kernel", "configs", "tiny.config"),
                os.path.join(src, "arch", "x86", "configs", "tiny.config")]
        r = subprocess.run([os.path.join(src, "scripts", "kconfig", "merge_config.sh"),
                            "-m", "-O", self.obj, os.path.join(self.obj, ".config")]
                           + [f for f in tiny if os.path.exists(f)] + self.fragments,
                           cwd=src, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError("merge_config.sh failed:\n" + r.stdout + r.stderr)
        self._run_make(src, "olddefconfig")
        want = {}
        for fragment in self.fragments:
            want.update(wanted_options(fragment))
        with open(os.path.join(self.obj, ".config")) as f:
            bad = config_problems(f.read(), want)
        if bad:
            raise BuildError("the kernel configuration lacks options the labs need:\n    "
                             + "\n    ".join(bad)
                             + f"\n(a dependency of theirs is missing from {names})")
        with open(cfg_stamp, "w") as f:
            f.write(digest)

    def stamp_text(self, commit):
        """What the stamp of a build from this commit, configuration and
        compiler flags says."""
        flags = hashlib.sha256(" ".join(self.make_flags).encode()).hexdigest()[:12]
        return f"{commit} {self.config_digest()} {flags}"

    def up_to_date(self, commit):
        """Would make find nothing to do? Yes when the last build succeeded
        from this very commit and configuration. That holds because the
        harness builds only a clean tree (tree.Tree.checkout refuses
        changes), and a build that saw the tree change leaves an empty stamp. It
        goes by content, not by file times: a checkout that wrote a file
        away and back leaves nothing to build. kbuild, asked instead,
        takes eight seconds to find that out, or fifty after a checkpoint
        switch (it recompiles what the checkout touched)."""
        if not (os.path.exists(self.bzimage) and os.path.exists(self.vmlinux)
                and os.path.exists(self.stamp)):
            return False
        with open(self.stamp) as f:
            return f.read().strip() == self.stamp_text(commit)

    def build(self, src, commit=None):
        """Build bzImage and the gdb scripts; 'commit' (the tree's HEAD,
        the tree clean) lets a build that has nothing to do be skipped
        (up_to_date)."""
        os.makedirs(os.path.dirname(self.log), exist_ok=True)
        self.configure(src)
        if commit and self.up_to_date(commit):
            ui.debug(f"{self.label} is up to date")
            return
        open(self.log, "w").close()
        timer = ui.Timer()
        ui.step(f"compiling {self.label} (log: {os.path.relpath(self.log)})")
        if os.path.exists(self.stamp):
            os.unlink(self.stamp)
        cold = not os.path.exists(self.vmlinux)
        p = self._make(src, *self.targets, log=self.log)
        self._heartbeat(p, self.cold_objects() if cold else None)
        if p.returncode != 0:
            raise BuildError(self._failure(f"building {self.label} failed"))
        if cold:
            with open(self._objects_record(), "w") as f:
                f.write(f"{compiled_objects(self.log)}\n")
        self.tidy()
        # A file edited while make ran may have been read before the edit:
        # then the objects match no commit, and the next run asks make.
        with open(self.stamp, "w") as f:
            f.write(self.stamp_text(commit) if commit and tree.changes(src) == "" else "")
        ui.info(f"{self.label} built in {timer}")

    def tidy(self):
        """Remove the link's leftovers (LINK_LEFTOVERS) from the object
        folder."""
        for pattern in LINK_LEFTOVERS:
            for path in glob.glob(os.path.join(self.obj, pattern)):
                os.unlink(path)

    def debug_info_problems(self):
        """What a built kernel shows of DEBUG_INFO_FLAGS: the last -g option
        on the recorded command line of one object in kernel/ and of
        fs/proc_namespace.o (full), and of one elsewhere (-g1). A list of
        disagreements; empty is right."""
        want = {"kernel/trace/trace.o": "-g", "fs/proc_namespace.o": "-g",
                "arch/x86/kernel/setup.o": "-g1"}
        problems = []
        for obj, level in want.items():
            line = self.command_line(obj)
            if line is None:
                problems.append(f"{obj}: no command line recorded")
                continue
            got = re.findall(r"(?<=\s)-g\d?(?=\s)", line)
            if (got[-1] if got else None) != level:
                problems.append(f"{obj}: compiled with {' '.join(got) or 'no -g'}, "
                                f"the last should be {level}")
        return problems

    def race_checking_problems(self):
        """Of a KCSAN kernel: the series' files of kernel/trace/ whose
        recorded command line lacks KCSAN's instrumentation
        (-fsanitize=thread; kernels.KCSAN_TRACE_FLAGS). Empty is right."""
        problems = []
        for obj in ("kernel/trace/trace_events_trigger.o", "kernel/trace/trace_functions.o",
                    "kernel/trace/trace_events.o", "kernel/trace/ftrace.o"):
            line = self.command_line(obj)
            if line is None:
                problems.append(f"{obj}: no command line recorded")
            elif "-fsanitize=thread" not in line:
                problems.append(f"{obj}: compiled without -fsanitize=thread")
        return problems

    def command_line(self, obj):
        """The compiler command kbuild recorded for obj (its .cmd file's
        first line), or None."""
        folder, name = os.path.split(obj)
        try:
            with open(os.path.join(self.obj, folder, f".{name}.cmd")) as f:
                return f.readline()
        except OSError:
            return None

    def where(self, frames, faddr2line):
        """{frame: "file:line"} of call-trace frames ("func+0x1c/0x50")
        in this kernel's vmlinux, by the kernel's scripts/faddr2line
        (the innermost line of an inlined call); frames it cannot place
        are left out."""
        return {f: chain[0][1] for f, chain in self.inlined(frames, faddr2line).items()}

    def inlined(self, frames, faddr2line):
        """{frame: [(function, "file:line")]} of call-trace frames: the
        functions the compiler inlined at each frame's address, innermost
        first, down to the frame's own function (scripts/faddr2line's
        "(inlined by)" lines), so that a report in event_probe_callback()
        names the event_probe_add() inlined there."""
        if not frames or not os.path.exists(self.vmlinux):
            return {}
        r = subprocess.run(["bash", faddr2line, self.vmlinux, *frames],
                           capture_output=True, text=True)
        return {f: chain for f, chain in parse_inlined(r.stdout).items() if f in frames}

    def modules(self):
        """{path in the guest: host file} of the modules the robustness
        tests load (the debug variant builds samples/trace_events)."""
        path = os.path.join(self.obj, "samples", "trace_events", "trace-events-sample.ko")
        return {"lab/robust/trace-events-sample.ko": path} if os.path.exists(path) else {}

    def _objects_record(self):
        return os.path.join(self.build_dir, "obj",
                            ".ftlab-objects" + self.id.spec.suffix)

    def cold_objects(self):
        """About how many objects a build from an empty folder makes: what
        the last one here made, else its variant's measured count
        (kernels.Variant.cold_objects; None: not known)."""
        try:
            with open(self._objects_record()) as f:
                return int(f.read())
        except (OSError, ValueError):
            return self.id.spec.cold_objects

    def _heartbeat(self, proc, total=None, every=60):
        """While make runs, say every minute how far it got: N of about
        'total' objects from an empty folder, else N so far (a folder that
        had a build recompiles only what changed)."""
        done = threading.Event()

        def report():
            while not done.wait(every):
                n = compiled_objects(self.log)
                ui.info(f"still compiling: {n} of about {total} objects" if total else
                        f"still compiling: {n} objects so far (only what changed)")
        t = threading.Thread(target=report, daemon=True)
        t.start()
        try:
            wait(proc)
        finally:
            done.set()


# The top folders of a kernel tree: where a source path of the debug
# info starts, whatever folder it was compiled in (ccache hands every
# clone the objects another compiled, their paths included).
_SOURCE_PATH = re.compile(r"(?:^|/)((?:arch|block|certs|crypto|drivers|fs|include|init|io_uring|"
                          r"ipc|kernel|lib|mm|net|samples|security|sound|virt)/\S+)$")


_CHAIN_LINE = re.compile(r"^(\(inlined by\) )?(\S+) at (\S+)")


def parse_inlined(text):
    """{frame: [(function, "file:line")]} of scripts/faddr2line's output:
    a "frame:" line, then a line per function inlined there, innermost
    first (the first match of a frame only)."""
    found, frame, taking = {}, None, False
    for line in text.splitlines():
        line = line.strip()
        if line.endswith(":") and "+0x" in line:
            frame, taking = line[:-1], line[:-1] not in found
            continue
        m = _CHAIN_LINE.match(line)
        if not (m and frame and taking):
            continue
        if not m.group(1) and frame in found:
            taking = False      # a second match of the same name
            continue
        found.setdefault(frame, []).append((m.group(2), source_path(m.group(3))))
    return found


def source_path(path):
    """A source path of the debug info, from the kernel tree's top:
    ".../build/obj/cp3/../../linux/kernel/trace/ftrace.c:12" gives
    "kernel/trace/ftrace.c:12"."""
    m = _SOURCE_PATH.search(path)
    return m.group(1) if m else path


def wait(proc):
    """Wait for a make; Ctrl-C ends it with SIGTERM, on which make removes
    the half-written file it was making (labkit.interrupt)."""
    key = interrupt.register(proc.terminate)
    try:
        return proc.wait()
    finally:
        interrupt.unregister(key)
