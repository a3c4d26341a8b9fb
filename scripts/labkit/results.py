"""Verdicts as a CI system reads them: JUnit XML and a JSON summary.

make check RESULTS=DIR and make lab N RESULTS=DIR write DIR/junit.xml and
DIR/summary.json from the verdicts ui.Tally collected. GitLab (artifacts:
reports: junit) and Jenkins (the junit step) show junit.xml as a test
report of their own: one testcase per verdict, a failing one with its
evidence (the diff) as the failure text, a skipped one as <skipped/>
with its reason. summary.json holds the same verdicts and the counts,
for a script that wants them without an XML parser.
"""

import json
import os
import re
import xml.etree.ElementTree as ET

STATUSES = ("pass", "fail", "skip")
JUNIT = "junit.xml"
SUMMARY = "summary.json"


class Verdict:
    """One verdict: its name (the line make check prints), its status
    ("pass", "fail" or "skip"), its text (the evidence printed with it, a
    diff or a log tail, or the reason it was skipped), the seconds it took
    and its group (the part of the suite: "harness", "kernel cp3", ...)."""

    def __init__(self, name, status, text="", seconds=0.0, group=""):
        if status not in STATUSES:
            raise ValueError(f"a verdict is one of {', '.join(STATUSES)}, not {status!r}")
        self.name, self.status, self.text = name, status, text
        self.seconds, self.group = seconds, group

    def as_dict(self):
        return {"name": self.name, "status": self.status, "text": self.text,
                "seconds": round(self.seconds, 3), "group": self.group}


def counts(verdicts):
    """{"pass": N, "fail": N, "skip": N}."""
    out = dict.fromkeys(STATUSES, 0)
    for v in verdicts:
        out[v.status] += 1
    return out


def _groups(verdicts):
    """{group: [verdicts]} in the order the groups first appear."""
    out = {}
    for v in verdicts:
        out.setdefault(v.group or "other", []).append(v)
    return out


# What XML 1.0 cannot hold, even escaped: a guest's console has such
# bytes (a terminal escape, a NUL from a half-written line).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text):
    """text with each character XML cannot hold written as \\xNN."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def junit(suite, verdicts):
    """The JUnit XML tree: <testsuites name=suite> with one <testsuite>
    per group, one <testcase> per verdict."""
    c = counts(verdicts)
    top = ET.Element("testsuites", name=_xml_text(suite), tests=str(len(verdicts)),
                     failures=str(c["fail"]), skipped=str(c["skip"]), errors="0",
                     time=f"{sum(v.seconds for v in verdicts):.3f}")
    for group, members in _groups(verdicts).items():
        gc = counts(members)
        node = ET.SubElement(top, "testsuite", name=_xml_text(group), tests=str(len(members)),
                             failures=str(gc["fail"]), skipped=str(gc["skip"]), errors="0",
                             time=f"{sum(v.seconds for v in members):.3f}")
        for v in members:
            text = _xml_text(v.text)
            case = ET.SubElement(node, "testcase", name=_xml_text(v.name),
                                 classname=_xml_text(f"{suite}.{group}"), time=f"{v.seconds:.3f}")
            if v.status == "fail":
                ET.SubElement(case, "failure", message=_first_line(text) or "failed").text = text
            elif v.status == "skip":
                ET.SubElement(case, "skipped", message=_first_line(text)).text = text
            elif text:
                ET.SubElement(case, "system-out").text = text
    return ET.ElementTree(top)


def summary(suite, verdicts):
    c = counts(verdicts)
    return {"suite": suite, "passed": c["pass"], "failed": c["fail"], "skipped": c["skip"],
            "verdicts": [v.as_dict() for v in verdicts]}


def write(directory, suite, verdicts):
    """Write directory/junit.xml and directory/summary.json (the directory
    is created if missing); returns their paths."""
    os.makedirs(directory, exist_ok=True)
    xml_path = os.path.join(directory, JUNIT)
    json_path = os.path.join(directory, SUMMARY)
    tree = junit(suite, verdicts)
    ET.indent(tree)
    tree.write(xml_path, encoding="utf-8", xml_declaration=True)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(summary(suite, verdicts), f, indent=1)
        f.write("\n")
    return xml_path, json_path
