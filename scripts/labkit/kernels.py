"""Which kernel: one value, KernelId, made once from the user's words and
asked everywhere else.

A kernel is upstream (the linux-source the series is on, unmodified) or
checkpoint N; plain or a variant (VARIANTS: the debug and KCSAN kernels);
built from its checkpoint's branch or from another ref (a flavour: the
learner's branch, a skeleton, a checkpoint with one hole, a hand-made
mutant; or, without a flavour, make rebase's new upstream). Its name,
label, branch, object folder, build spec and neighbours are answered
here and nowhere else: no other module compares a kernel with
"upstream" or builds a kernel's name.

What a run does with a kernel (TRACE=1, CHECK=ID, gdb) is not identity:
those stay parameters of the boot.
"""

import dataclasses
import os
import re

from . import series
from .errors import HarnessError

# The name of the unmodified kernel, and its branch in build/linux.
UPSTREAM = "upstream"

CONFIG_FRAGMENT = os.path.join(series.ROOT, "scripts", "lab.config")

# kernel/trace/Makefile builds the tracing code without KCSAN when the
# function tracer is on (KCSAN_SANITIZE := n, "to avoid recursion"): the
# very code the series changes. A pattern-specific variable, given to
# every sub-make of kbuild by --eval as kbuild.DEBUG_INFO_FLAGS, takes
# precedence over that folder's global one in its objects' command
# lines. No recursion follows: kernel/trace/ is built without the
# function tracer's hooks, and KCSAN's runtime (kernel/kcsan/) neither
# traced nor instrumented.
KCSAN_TRACE_FLAGS = ("--eval=kernel/trace/%.o: KCSAN_SANITIZE := y",)


class KernelError(HarnessError):
    """Words that name no kernel."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """How a variant builds and boots.

    fragments: merged on top of lab.config; suffix: of its name and object
    folder; label: its words in a kernel's label; modules: it builds the
    sample module the robustness tests load; flags: its own make flags;
    warn_panics: a WARN panics its guests (not KCSAN's: it would panic at
    its first race report, qemu.append); smp: its guests' vCPUs; slowdown:
    how many times longer its guests may run; worktree: the second
    checkout it builds in (tree.Worktree), so that make check builds it
    while build/linux moves on, or None for build/linux itself;
    cold_objects: about how many objects a build from an empty folder
    makes (the heartbeat's "N of about M"), None when not measured."""
    name: str
    fragments: tuple = ()
    suffix: str = ""
    label: str = ""
    modules: bool = False
    flags: tuple = ()
    warn_panics: bool = True
    smp: int = 1
    slowdown: int = 1
    worktree: str = None
    cold_objects: int = None


# A debug kernel (KASAN, lockdep, kmemleak, two vCPUs on one host thread)
# runs guests several times slower. The KCSAN variant is the data-race
# detector, which excludes KASAN: a variant of its own.
VARIANTS = {v.name: v for v in (
    Variant("plain", cold_objects=945),
    Variant("debug", fragments=(os.path.join(series.ROOT, "scripts", "debug.config"),),
            suffix="-debug", label=" (debug)", modules=True, smp=2, slowdown=4,
            worktree="debug"),
    Variant("kcsan", fragments=(os.path.join(series.ROOT, "scripts", "kcsan.config"),),
            suffix="-kcsan", label=" (KCSAN)", flags=KCSAN_TRACE_FLAGS, warn_panics=False,
            smp=2, slowdown=4, worktree="debug", cold_objects=1304),
)}

# What a kernel can be built from besides its checkpoint's branch.
# as_is: the ref's files as they are in build/linux, uncommitted changes
# included (the learner's branch).
FLAVOURS = {
    "student": "the learner's exercise branch, as it is",
    "skeleton": "the exercise's skeleton (holes left out)",
    "isolated": "the checkpoint with one hole left out (scripts/prove-holes.py)",
    "mutant": "a hand-made wrong body on a branch of its own",
}

_NAME_RE = re.compile(r"^(?:(?P<flavour>[a-z]+)-)?(?:(?P<up>upstream)|cp(?P<n>\d+))"
                      r"(?P<suffix>-[a-z]+)?$")


@dataclasses.dataclass(frozen=True)
class KernelId:
    """One kernel: upstream (checkpoint None) or checkpoint N, a variant
    (a key of VARIANTS), and what it is built from when not its own
    branch: flavour (a key of FLAVOURS, or None), ref (a git ref of
    build/linux), as_is (the ref's files as they are, uncommitted changes
    included)."""
    checkpoint: int = None
    variant: str = "plain"
    flavour: str = None
    ref: str = None
    as_is: bool = False

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise KernelError(f"no kernel variant '{self.variant}' "
                              f"(there are: {', '.join(VARIANTS)})")
        if self.flavour is not None and self.flavour not in FLAVOURS:
            raise KernelError(f"no kernel flavour '{self.flavour}' "
                              f"(there are: {', '.join(FLAVOURS)})")
        if self.flavour is not None and self.checkpoint is None:
            raise KernelError(f"a {self.flavour} kernel is one of a checkpoint, not upstream's")

    # --- making one --------------------------------------------------------

    @classmethod
    def upstream(cls, variant="plain"):
        return cls(None, variant)

    @classmethod
    def of(cls, number, variant="plain"):
        """Checkpoint 'number' (None: upstream)."""
        return cls(number, variant)

    @classmethod
    def parse(cls, text):
        """The kernel a name stands for: "upstream", "cpN" or "N", with a
        variant's suffix ("cp7-debug") or a flavour's prefix
        ("skeleton-cp3") as name gives them."""
        text = str(text).strip()
        if text.isdigit():
            return cls.of(int(text))
        m = _NAME_RE.match(text)
        variants = {v.suffix: v.name for v in VARIANTS.values()}
        if not m or (m["suffix"] or "") not in variants:
            raise KernelError(f"'{text}' names no kernel: say upstream, cpN or N")
        return cls(None if m["up"] else int(m["n"]), variants[m["suffix"] or ""],
                   m["flavour"])

    @classmethod
    def every(cls, variant="plain"):
        """Upstream, then every checkpoint of the series, in order."""
        return [cls.upstream(variant)] + [cls.of(cp.number, variant)
                                          for cp in series.checkpoints()]

    def with_variant(self, variant):
        return dataclasses.replace(self, variant=variant)

    def built_from(self, ref, flavour=None, as_is=False):
        """This kernel built from another ref: a flavour's (named then
        after it, in an object folder of its own), or with flavour None
        the same kernel from a new commit (make rebase)."""
        return dataclasses.replace(self, ref=ref, flavour=flavour, as_is=as_is)

    def plain(self):
        """The checkpoint (or upstream) itself: plain, from its own branch."""
        return KernelId(self.checkpoint)

    # --- what it is --------------------------------------------------------

    @property
    def is_upstream(self):
        return self.checkpoint is None

    @property
    def spec(self):
        """Its variant's Variant: how it builds and boots."""
        return VARIANTS[self.variant]

    @property
    def debug(self):
        """Built with a sanitizer (any variant but plain): slower guests
        with two vCPUs, reports in the kernel log."""
        return self.variant != "plain"

    @property
    def base_name(self):
        """"upstream" or "cpN": verdicts, the guest's ftlab.kernel=, the
        conformance corpus's tags, the docs' examples."""
        return UPSTREAM if self.is_upstream else f"cp{self.checkpoint}"

    @property
    def name(self):
        """Its name in object folders, logs and verdicts: base_name with
        its flavour before it and its variant's suffix after it."""
        return (f"{self.flavour}-" if self.flavour else "") + self.base_name + self.spec.suffix

    @property
    def label(self):
        """Its name in sentences."""
        if self.is_upstream:
            words = f"upstream {base_release()}"
        elif self.flavour == "student":
            words = f"your checkpoint {self.checkpoint} ({self.ref})"
        else:
            words = f"checkpoint {self.checkpoint}" + (f"'s {self.flavour}" if self.flavour
                                                        else "")
        return words + self.spec.label

    @property
    def branch(self):
        """The ref its files come from: its own ref, else upstream's branch
        or its checkpoint's (which tree.Tree.prepare_branch makes)."""
        if self.ref:
            return self.ref
        return UPSTREAM if self.is_upstream else series.lookup(self.checkpoint).branch

    def __str__(self):
        return self.name

    # --- what it has, and its neighbours ------------------------------------

    def has(self, number):
        """Does it have checkpoint 'number's features? Checkpoint N has
        those of checkpoints 0 to N; upstream has them all."""
        return self.is_upstream or self.checkpoint >= number

    def is_just_before(self, number):
        """Is it checkpoint number - 1, where lab 'number's feature checks
        must fail?"""
        return not self.is_upstream and self.checkpoint == number - 1

    def is_last(self):
        return not self.is_upstream and self.checkpoint == series.last_checkpoint()

    def previous(self):
        """The kernel a checkpoint's patches apply to (same variant):
        checkpoint N-1, upstream's for checkpoint 0; None for upstream."""
        if self.is_upstream:
            return None
        return KernelId(self.checkpoint - 1 if self.checkpoint else None, self.variant)

    def next(self):
        """Checkpoint N+1 (same variant), or None after the last and for upstream."""
        if self.is_upstream or series.lookup(self.checkpoint + 1) is None:
            return None
        return KernelId(self.checkpoint + 1, self.variant)

    def rank(self):
        """A sort key: upstream first (the reference), then the checkpoints
        in order."""
        return (0, 0) if self.is_upstream else (1, self.checkpoint)

    def seed_names(self, existing=()):
        """The object folders a new one of this kernel starts from, best
        first: the previous checkpoint's of the same variant, else
        upstream's (make check builds the last checkpoint right after
        upstream); a flavour's starts from the previous checkpoint's,
        else its own checkpoint's (they differ in the holes only); a
        mutant's from its own checkpoint's first (make mutants builds it
        before its mutants: they differ from it in one hole). A
        variant other than plain may start from any folder of its variant
        ('existing': the names in build/obj), its own included (a folder
        that exists is never seeded again): only the files the checkout
        changed recompile."""
        suffix = self.spec.suffix
        names = []
        if not self.is_upstream:
            names = [self.previous().plain().base_name + suffix, UPSTREAM + suffix]
            if self.flavour == "mutant":
                names.insert(0, self.base_name + suffix)
            elif self.flavour:
                names.insert(1, self.base_name + suffix)
        if self.debug:
            names += sorted(n for n in existing if n.endswith(suffix))
        return list(dict.fromkeys(names))


def base_release():
    """The base's upstream release, "6.12" of patches/BASE's "6.12.118-1~deb12u1"."""
    try:
        version = series.base_version()
    except (OSError, series.SeriesError):
        return "?"
    return ".".join(version.split(".")[:2])
