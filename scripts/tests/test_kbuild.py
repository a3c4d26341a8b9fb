import os
import unittest

from labkit import kbuild, kernels, tree
from labkit.kernels import KernelId as K

DEBUG_FRAGMENT, = kernels.VARIANTS["debug"].fragments
KCSAN_FRAGMENT, = kernels.VARIANTS["kcsan"].fragments


class ConfigCheck(unittest.TestCase):
    WANT = {"CONFIG_A": "y", "CONFIG_B": "n"}

    def test_all_there(self):
        self.assertEqual(kbuild.config_problems("CONFIG_A=y\n# CONFIG_B is not set\n", self.WANT), [])

    def test_missing_and_unwanted_are_named(self):
        bad = kbuild.config_problems("CONFIG_B=y\n", self.WANT)
        self.assertEqual(len(bad), 2)
        self.assertTrue(any("CONFIG_A" in b and "wanted y" in b for b in bad))
        self.assertTrue(any("CONFIG_B" in b and "wanted not set" in b for b in bad))

    def test_fragment_names_the_lab_options(self):
        want = kbuild.wanted_options()
        for opt in ("CONFIG_FUNCTION_TRACER", "CONFIG_DYNAMIC_FTRACE", "CONFIG_GDB_SCRIPTS",
                    "CONFIG_STACK_TRACER", "CONFIG_TRACER_SNAPSHOT"):
            self.assertEqual(want[opt], "y")
        self.assertEqual(want["CONFIG_UPROBE_EVENTS"], "n")


class UpToDate(unittest.TestCase):
    """A warm 'make lab N' skips kbuild only when the objects are those of
    the commit and configuration at hand (the tree is clean: the harness
    builds no other), whatever the files' times say."""

    def setUp(self):
        import os
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.k = kbuild.Kernel(self.dir, K.of(1))
        os.makedirs(os.path.dirname(self.k.bzimage))
        for path in (self.k.bzimage, self.k.vmlinux):
            open(path, "w").close()
        with open(self.k.stamp, "w") as f:
            f.write(self.k.stamp_text("abc") + "\n")

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def test_nothing_changed(self):
        self.assertTrue(self.k.up_to_date("abc"))

    def test_another_commit(self):
        self.assertFalse(self.k.up_to_date("def"))

    def test_another_configuration(self):
        self.k.fragments = self.k.fragments + [DEBUG_FRAGMENT]
        self.assertFalse(self.k.up_to_date("abc"))

    def test_a_build_that_saw_the_tree_change_left_an_empty_stamp(self):
        open(self.k.stamp, "w").close()
        self.assertFalse(self.k.up_to_date("abc"))

    def test_no_vmlinux(self):
        import os
        os.unlink(self.k.vmlinux)
        self.assertFalse(self.k.up_to_date("abc"))


def git_repo(name, text):
    """A new git repository in a temporary folder with one file committed:
    (folder, git command prefix)."""
    import os
    import subprocess
    import tempfile
    src = tempfile.mkdtemp()
    git = ["git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    with open(os.path.join(src, name), "w") as f:
        f.write(text)
    subprocess.run(git + ["add", name], check=True)
    subprocess.run(git + ["commit", "-q", "-m", name], check=True)
    return src, git


class TreeClean(unittest.TestCase):
    """What the stamp trusts: git's view of the tree."""

    def test_clean_and_dirty(self):
        import os
        src, _git = git_repo("a.c", "int a;\n")
        self.assertTrue(tree.changes(src) == "")
        open(os.path.join(src, "new.c"), "w").close()      # untracked: make ignores it
        self.assertTrue(tree.changes(src) == "")
        with open(os.path.join(src, "a.c"), "w") as f:
            f.write("int b;\n")
        self.assertFalse(tree.changes(src) == "")
        import shutil
        shutil.rmtree(src)


class FailedPatch(unittest.TestCase):
    """A checkpoint's patches go to one "git am"; when one does not apply,
    the error must name that one, not the first."""

    def test_the_patch_git_am_stopped_at(self):
        import glob
        import os
        import shutil
        import subprocess
        src, git = git_repo("f", "a\nb\n")
        out = os.path.join(src, "patches")
        for line in ("one", "two", "three"):
            with open(os.path.join(src, "f"), "a") as f:
                f.write(line + "\n")
            subprocess.run(git + ["commit", "-q", "-am", line], check=True)
        subprocess.run(git + ["format-patch", "-q", "-3", "-o", out, "HEAD"], check=True)
        subprocess.run(git + ["reset", "-q", "--hard", "HEAD~3"], check=True)
        patches = sorted(glob.glob(os.path.join(out, "*.patch")))
        with open(patches[1]) as f:
            text = f.read().replace(" one\n", " nowhere\n")
        with open(patches[1], "w") as f:
            f.write(text)
        r = subprocess.run(git + ["am", "-q"] + patches, capture_output=True)
        t = tree.Tree(src)
        t.path = src
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(t._am_stopped_at(len(patches)), 1)
        subprocess.run(git + ["am", "--abort"], capture_output=True)
        self.assertEqual(t._am_stopped_at(len(patches)), 0)    # no state: the first
        shutil.rmtree(src)


class DebugInfo(unittest.TestCase):
    """Full debug info only where gdb reads structures and variables."""

    def test_every_object_gets_g1_and_the_full_debug_folders_g_after_it(self):
        every, full = kbuild.DEBUG_INFO_FLAGS
        self.assertEqual(every, "--eval=%.o: KBUILD_CFLAGS += -g1")
        self.assertEqual(full, "--eval=kernel/%.o fs/proc_namespace.o mm/vmalloc.o mm/slub.o: "
                               "KBUILD_CFLAGS += -g")
        self.assertNotIn("$", every + full)    # expanded too early in kbuild's sub-makes

    def test_the_stamp_changes_with_the_flags(self):
        k = kbuild.Kernel("/b", K.of(1))
        k.config_digest = lambda: "cfg"
        before = k.stamp_text("abc")
        k.make_flags = kbuild.DEBUG_INFO_FLAGS[:1]
        self.assertNotEqual(k.stamp_text("abc"), before)
        kcsan = kbuild.Kernel("/b", K.of(1, "kcsan"))
        kcsan.config_digest = lambda: "cfg"
        self.assertNotEqual(kcsan.stamp_text("abc"), before)


class DebugInfoOfABuild(unittest.TestCase):
    """make check reads the flags back from a built kernel's records: the
    first attempt at DEBUG_INFO_FLAGS left kernel/ with -g1 last."""

    def setUp(self):
        import os
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.k = kbuild.Kernel(self.dir, K.of(1))
        for folder in ("kernel/trace", "fs", "arch/x86/kernel"):
            os.makedirs(os.path.join(self.k.obj, folder))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def record(self, obj, flags):
        import os
        folder, name = os.path.split(obj)
        with open(os.path.join(self.k.obj, folder, f".{name}.cmd"), "w") as f:
            f.write(f"cmd_{obj} := ccache gcc -O2 -g {flags} -I x -c -o {obj} x.c\n")

    def test_right(self):
        self.record("kernel/trace/trace.o", "-g1 -g1 -g")
        self.record("fs/proc_namespace.o", "-g1 -g1 -g")
        self.record("arch/x86/kernel/setup.o", "-g1 -g1")
        self.assertEqual(self.k.debug_info_problems(), [])

    def test_kernel_left_with_g1_is_named(self):
        self.record("kernel/trace/trace.o", "-g1")
        self.record("fs/proc_namespace.o", "-g1 -g")
        self.record("arch/x86/kernel/setup.o", "-g1")
        problems = self.k.debug_info_problems()
        self.assertEqual(len(problems), 1)
        self.assertIn("kernel/trace/trace.o", problems[0])

    def test_flags_not_applied_and_no_record(self):
        self.record("arch/x86/kernel/setup.o", "")
        problems = self.k.debug_info_problems()
        self.assertEqual(len(problems), 3)
        self.assertTrue(any("no command line" in p for p in problems))


class DebugVariant(unittest.TestCase):
    """make lab N DEBUG=1 and make check's debug part: the same checkpoint
    with scripts/debug.config, in a folder of its own, two vCPUs."""

    def test_plain_and_debug_differ_only_where_they_must(self):
        plain, debug = kbuild.Kernel("/b", K.of(7)), kbuild.Kernel("/b", K.of(7, "debug"))
        self.assertEqual((plain.name, debug.name), ("cp7", "cp7-debug"))
        self.assertEqual(debug.obj, "/b/obj/cp7-debug")
        self.assertEqual(plain.fragments, [kbuild.CONFIG_FRAGMENT])
        self.assertEqual(debug.fragments, [kbuild.CONFIG_FRAGMENT, DEBUG_FRAGMENT])
        self.assertNotIn("modules", plain.targets)
        self.assertIn("modules", debug.targets)
        self.assertEqual((plain.smp, debug.smp), (1, 2))
        self.assertEqual(debug.label, "checkpoint 7 (debug)")

    def test_debug_fragment_asks_for_every_checker(self):
        want = kbuild.wanted_options(DEBUG_FRAGMENT)
        for opt in ("CONFIG_SMP", "CONFIG_ACPI", "CONFIG_PCI", "CONFIG_KASAN", "CONFIG_PROVE_LOCKING",
                    "CONFIG_PROVE_RCU", "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_LIST",
                    "CONFIG_DEBUG_KMEMLEAK", "CONFIG_SLUB_DEBUG", "CONFIG_MODULES"):
            self.assertEqual(want[opt], "y", opt)
        self.assertEqual(want["CONFIG_SAMPLE_TRACE_EVENTS"], "m")

    def test_no_probe_events_to_build_eprobes_on(self):
        """The baseline removes the trigger code eprobes are built on:
        every option that selects PROBE_EVENTS stays off (FPROBE_EVENTS
        is 6.5's)."""
        want = kbuild.wanted_options(kbuild.CONFIG_FRAGMENT)
        for opt in ("CONFIG_UPROBE_EVENTS", "CONFIG_KPROBE_EVENTS", "CONFIG_FPROBE_EVENTS"):
            self.assertEqual(want[opt], "n", opt)

    def test_debug_fragment_turns_slub_tiny_off(self):
        """6.12's tinyconfig sets SLUB_TINY, on which KASAN, SLUB_DEBUG and
        kmemleak's slab hooks depend off; 6.1 has no such option, and an
        "is not set" line of an option it lacks changes nothing there."""
        self.assertEqual(kbuild.wanted_options(DEBUG_FRAGMENT)["CONFIG_SLUB_TINY"], "n")
        self.assertEqual(kbuild.config_problems("CONFIG_KASAN=y\n", {"CONFIG_SLUB_TINY": "n"}), [])


class SeedFolder(unittest.TestCase):
    """A new object folder starts from a neighbour's of the same variant."""

    def setUp(self):
        import os
        import tempfile
        from labkit import labrun
        self.dir = tempfile.mkdtemp()
        self.session = labrun.Session(self.dir)
        for name in ("upstream", "cp6", "upstream-debug"):
            os.makedirs(os.path.join(self.dir, "obj", name))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def test_plain_from_the_previous_checkpoint_else_upstream(self):
        self.assertTrue(self.session.seed_folder(K.of(7)).endswith("/obj/cp6"))
        self.assertTrue(self.session.seed_folder(K.of(0)).endswith("/obj/upstream"))
        self.assertIsNone(self.session.seed_folder(K.upstream()))
        self.assertTrue(self.session.seed_folder(K.of(3)).endswith("/obj/upstream"))

    def test_plain_from_nothing_without_upstream(self):
        import os
        os.rmdir(os.path.join(self.dir, "obj", "upstream"))
        self.assertIsNone(self.session.seed_folder(K.of(3)))

    def test_debug_from_any_debug_folder(self):
        self.assertTrue(self.session.seed_folder(K.of(7, "debug")).endswith("/obj/upstream-debug"))
        self.assertTrue(self.session.seed_folder(K.upstream("debug")).endswith("/obj/upstream-debug"))

    def test_kcsan_only_from_a_kcsan_folder(self):
        """A KCSAN kernel's objects differ from every other variant's (the
        configuration changes every object's flags): a copy of a debug
        folder would only be rebuilt in full."""
        import os
        self.assertIsNone(self.session.seed_folder(K.of(7, "kcsan")))
        os.makedirs(os.path.join(self.dir, "obj", "upstream-kcsan"))
        self.assertTrue(self.session.seed_folder(K.of(7, "kcsan")).endswith("/obj/upstream-kcsan"))

    def test_a_variant_kernel_has_its_own_name_fragment_and_two_vcpus(self):
        from labkit import kbuild
        k = kbuild.Kernel(self.dir, K.of(7, "kcsan"))
        self.assertEqual((k.name, k.smp, k.debug, k.label),
                         ("cp7-kcsan", 2, True, "checkpoint 7 (KCSAN)"))
        self.assertEqual(k.fragments, [kbuild.CONFIG_FRAGMENT, KCSAN_FRAGMENT])
        self.assertNotIn("modules", k.targets)
        self.assertEqual(kbuild.Kernel(self.dir, K.of(7, "debug")).name, "cp7-debug")
        self.assertEqual(k.make_flags, kbuild.DEBUG_INFO_FLAGS + list(kernels.KCSAN_TRACE_FLAGS))
        self.assertEqual(kbuild.Kernel(self.dir, K.of(7)).make_flags, kbuild.DEBUG_INFO_FLAGS)

    def test_a_kcsan_kernel_must_instrument_the_tracing_code(self):
        import os
        from labkit import kbuild
        k = kbuild.Kernel(self.dir, K.of(7, "kcsan"))
        trace = os.path.join(k.obj, "kernel", "trace")
        os.makedirs(trace)
        for name in ("trace_events_trigger", "trace_functions", "trace_events", "ftrace"):
            with open(os.path.join(trace, f".{name}.o.cmd"), "w") as f:
                f.write("cmd_kernel/trace/x.o := gcc -fsanitize=thread -c x.c\n")
        self.assertEqual(k.race_checking_problems(), [])
        with open(os.path.join(trace, ".ftrace.o.cmd"), "w") as f:
            f.write("cmd_kernel/trace/ftrace.o := gcc -c ftrace.c\n")
        self.assertEqual(k.race_checking_problems(),
                         ["kernel/trace/ftrace.o: compiled without -fsanitize=thread"])


class PlainPassOrder(unittest.TestCase):
    def test_the_last_checkpoint_right_after_upstream(self):
        from labkit import check, series
        order = [cp.number for cp in check.plain_pass_order(series.checkpoints())]
        self.assertEqual(order, [7, 0, 1, 2, 3, 4, 5, 6])


class Heartbeat(unittest.TestCase):
    """While make runs, a line a minute: N of about M objects when the
    object folder was empty (M: what the last such build here made)."""

    def setUp(self):
        import tempfile
        self.build = tempfile.mkdtemp()
        self.k = kbuild.Kernel(self.build, K.of(1))
        os.makedirs(os.path.dirname(self.k.log))
        with open(self.k.log, "w") as f:
            f.write("  CC      kernel/a.o\n  CC      kernel/b.o\n  LD      vmlinux.o\n"
                    "  HOSTCC  scripts/x\n")

    def beat(self, total):
        """_heartbeat's first line, with make a stand-in that ends once it
        has been reported on."""
        import io
        import time
        from contextlib import redirect_stdout
        out = io.StringIO()

        class Make:
            returncode = 0

            def wait(self):
                for _ in range(3000):
                    if out.getvalue():
                        return 0
                    time.sleep(0.01)
                return 0

            def terminate(self):
                pass
        with redirect_stdout(out):
            self.k._heartbeat(Make(), total, every=0.01)
        return out.getvalue().splitlines()[0].strip()

    def test_of_about_m_from_an_empty_folder(self):
        self.assertEqual(self.beat(1500), "still compiling: 3 of about 1500 objects")

    def test_so_far_when_only_what_changed_is_built(self):
        self.assertEqual(self.beat(None), "still compiling: 3 objects so far (only what changed)")

    def test_m_is_what_the_last_cold_build_made(self):
        os.makedirs(os.path.join(self.build, "obj"))
        self.assertEqual(self.k.cold_objects(), kernels.VARIANTS["plain"].cold_objects)
        with open(os.path.join(self.build, "obj", ".ftlab-objects"), "w") as f:
            f.write("1234\n")
        self.assertEqual(self.k.cold_objects(), 1234)
        self.assertEqual(kbuild.Kernel(self.build, K.of(1, "debug")).cold_objects(),
                         kernels.VARIANTS["debug"].cold_objects)


class SourcePath(unittest.TestCase):
    """A report's file:line starts at the kernel tree's top, whichever
    clone compiled the object (ccache shares objects, debug info and all)."""

    def test_from_the_tree_top(self):
        self.assertEqual(kbuild.source_path("/work/x/build/obj/mutant-cp3-debug/../../linux-debug/"
                                            "kernel/trace/trace_events.c:3608"),
                         "kernel/trace/trace_events.c:3608")
        self.assertEqual(kbuild.source_path("kernel/trace/ftrace.c:4624"),
                         "kernel/trace/ftrace.c:4624")
        self.assertEqual(kbuild.source_path("??:0"), "??:0")


class MakeEnvironment(unittest.TestCase):
    def test_the_front_doors_variables_stay_out_of_the_kernels_make(self):
        outer = {"PATH": "/bin", "HOME": "/root", "DEBUG": "1", "ID": "3.4-leak",
                 "MAKEFLAGS": "w -- DEBUG=1 ID=3.4-leak", "MAKELEVEL": "1", "MFLAGS": "-w",
                 "CCACHE_DIR": "/c"}
        env = kbuild.make_env(outer)
        self.assertEqual(env, {"PATH": "/bin", "HOME": "/root", "CCACHE_DIR": "/c"})
        # a DEBUG of the user's own environment, not of make's command line, stays
        self.assertEqual(kbuild.make_env({"DEBUG": "1"}), {"DEBUG": "1"})
        # V=1 still reaches the kernel's make, on its command line
        self.assertEqual(kbuild.passed_on(dict(outer, MAKEFLAGS="w -- V=1 DEBUG=1")), ["V=1"])
        self.assertEqual(kbuild.passed_on(outer), [])
