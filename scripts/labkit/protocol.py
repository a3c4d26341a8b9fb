"""The guest protocol, both ways. To the guest: the plan items that say
what a boot runs (lab_item). From it: the "@@ftlab" lines (written by
initramfs/lib.sh) read out of a console log: which labs ran, each
check's output and exit code, and the output of each test of an
ftracetest run."""

import re

_LINE = re.compile(r"^@@ftlab (\S+)\s*(.*)$")
# ftracetest's result line: "[N] DESCRIPTION<tab>[RESULT]" (colours aside)
FT_RESULTS = ("PASS", "FAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED", "XFAIL", "UNDEFINED")
FT_RESULT = re.compile(r"^\[(\d+)\]\s+(.*?)\s*\[(" + "|".join(FT_RESULTS) + r")\]\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A case's line, with or without the result appended at its end
FT_START = re.compile(r"^\[(\d+)\]\s+(.*)$")


def lab_item(number, only=None):
    """The plan item that runs lab 'number' (only its check 'only')."""
    return f"lab:{number:02d}" + (f":{only}" if only else "")


def ft_result(line):
    """(case number, description, RESULT) of an ftracetest result line, or None."""
    m = FT_RESULT.match(_ANSI.sub("", line).strip())
    return (int(m.group(1)), m.group(2), m.group(3)) if m else None


class Check:
    def __init__(self, lab, ident, kind, title):
        self.lab, self.id, self.kind, self.title = lab, ident, kind, title
        self.output = []
        self.rc = None          # None: the check never finished

    @property
    def replaced_at(self):
        """The checkpoint that changes this behaviour (kind replaced-at-N)."""
        if self.kind.startswith("replaced-at-"):
            return int(self.kind[len("replaced-at-"):])
        return None


class LabRun:
    def __init__(self, lab):
        self.lab = lab
        self.checks = []
        self.unsupported = None     # the missing requirement, if any
        self.finished = False


class GuestReport:
    def __init__(self):
        self.labs = {}
        # test -> its lines of ftracetest's output: its result line, and
        # the log ftracetest prints after it when it fails. "TEST@instance"
        # is the test's second run, in a new trace instance.
        self.ftracetest = {}
        self.errors = []            # "@@ftlab error TEXT": each fails the run


class _FtracetestRun:
    """One ftracetest run being read: which test each case number is (the
    "ftracetest-case N TEST" lines before it) and whose output comes now.
    ftracetest prints "[N] description" when a case starts, its result at
    the end of that line when the case ends, and the case's log after it,
    so a line belongs to the last case that started."""

    def __init__(self, cases):
        self.cases = cases
        self.current = None

    def take(self, report, line):
        found = FT_START.match(_ANSI.sub("", line).strip())
        if found:
            self.current = self.cases.get(int(found[1]))
            if self.current is None:    # the guest's numbering missed ftracetest's
                report.errors.append(f"ftracetest reported a case [{found[1]}] that the guest"
                                     f" did not list: {found[2]}")
        if self.current is not None:
            report.ftracetest.setdefault(self.current, []).append(line)


def parse(lines):
    report = GuestReport()
    check = None
    ft_cases, ft_run, ft_name = {}, None, None
    for line in lines:
        m = _LINE.match(line.strip())
        if not m:
            if check is not None:
                check.output.append(line)
            elif ft_run is not None:
                ft_run.take(report, line)
            continue
        word, rest = m.group(1), m.group(2)
        args = rest.split()
        if word == "lab-begin":
            report.labs[args[0]] = LabRun(args[0])
        elif word == "lab-unsupported":
            report.labs.setdefault(args[0], LabRun(args[0])).unsupported = " ".join(args[1:])
        elif word == "lab-end":
            report.labs.setdefault(args[0], LabRun(args[0])).finished = True
        elif word == "check-begin":
            lab, ident, kind = args[0], args[1], args[2]
            title = rest.split(None, 3)[3] if len(args) > 3 else ident
            check = Check(lab, ident, kind, title)
            report.labs.setdefault(lab, LabRun(lab)).checks.append(check)
        elif word == "check-end":
            if check is not None:
                check.rc = int(args[2].split("=", 1)[1])
            check = None
        elif word == "ftracetest-case":
            ft_cases[int(args[0])] = args[1]
        elif word == "ftracetest-begin":
            ft_run, ft_name = _FtracetestRun(ft_cases), args[0]
        elif word == "ftracetest-end":
            # The exit code (RC) is for people reading the console: each
            # case is graded on its own result line.
            ft_cases, ft_run = {}, None
        elif word == "error":
            report.errors.append(rest)
    if ft_run is not None:
        where = f"in {ft_run.current}" if ft_run.current else "before its first case"
        report.errors.append(f"ftracetest run '{ft_name}' did not finish: the console ends {where}")
    return report


def ftracetest_results(report):
    """{test: RESULT} of every test an ftracetest run reported on; keys as
    in report.ftracetest."""
    out = {}
    for key, lines in report.ftracetest.items():
        for line in lines:
            found = ft_result(line)
            if found:
                out[key] = found[2]
                break
    return out
