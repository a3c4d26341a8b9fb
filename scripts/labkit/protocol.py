"""Read the guest's "@@ftlab" lines (written by initramfs/lib.sh) out of a
console log: which labs ran, each check's output and exit code, and each
ftracetest run's output."""

import re

_LINE = re.compile(r"^@@ftlab (\S+)\s*(.*)$")


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
        self.ftracetest = {}        # test -> (lines, rc)
        self.errors = []            # "@@ftlab error TEXT": each fails the run


def parse(lines):
    report = GuestReport()
    check = None
    ft_test, ft_lines = None, []
    for line in lines:
        m = _LINE.match(line.strip())
        if not m:
            if check is not None:
                check.output.append(line)
            elif ft_test is not None:
                ft_lines.append(line)
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
        elif word == "ftracetest-begin":
            ft_test, ft_lines = args[0], []
        elif word == "ftracetest-end":
            report.ftracetest[ft_test] = (ft_lines, int(args[1].split("=", 1)[1]))
            ft_test = None
        elif word == "error":
            report.errors.append(rest)
    return report
