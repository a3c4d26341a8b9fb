import contextlib
import io
import types
import unittest
from unittest import mock

from labkit import check, conformance, docexamples, errnos, labrun, protocol, series, ui
from labkit.kernels import KernelId as K


def plain_labs(upto=None):
    """The labs with no gdb, up to lab 'upto'."""
    return [cp.number for cp in series.checkpoints() if cp.has_lab and not cp.needs_gdb
            and (upto is None or cp.number <= upto)]


class Done:
    """A Future that is over."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class GradePass(unittest.TestCase):
    """A plain kernel's boot is graded kind by kind, in one order: the
    labs, ftracetest, the docs' examples, the conformance corpus, and the
    whole suite against upstream's."""

    def grade(self, kernel, reference, boot_ok=True):
        calls = []
        kid = K.parse(kernel)

        def record(name, value=None):
            return lambda *args, **kwargs: calls.append(name) or value
        run = types.SimpleNamespace(log="check.log", lines=[])
        k = types.SimpleNamespace(id=kid, name=kid.name, label=kid.label)
        p = check.Pass(k, Done((run, protocol.GuestReport())))
        tally = ui.Tally()
        with mock.patch.object(labrun, "grade_boot", record("boot", boot_ok)), \
                mock.patch.object(labrun, "grade_lab",
                                  lambda report, cp, kernel, tally: calls.append(cp.number)), \
                mock.patch.object(labrun, "grade_ftracetest", record("ftracetest")), \
                mock.patch.object(docexamples, "load", lambda: []), \
                mock.patch.object(docexamples, "grade_kernel", record("docexamples")), \
                mock.patch.object(conformance, "load_corpus", lambda: []), \
                mock.patch.object(conformance, "grade_reference",
                                  record("conformance reference", "upstream's corpus")), \
                mock.patch.object(errnos, "check", record("errnos")), \
                mock.patch.object(conformance, "grade_checkpoint", record("conformance")), \
                mock.patch.object(conformance, "grade_ftall", record("whole suite")), \
                mock.patch.object(protocol, "ftracetest_results", lambda report: {"t": "PASS"}), \
                contextlib.redirect_stdout(io.StringIO()):
            graded = check.grade_pass(p, tally, reference)
        return calls, [v.name for v in tally.verdicts], graded

    def test_upstream_then_the_last_checkpoint(self):
        reference = check.Reference()
        calls, _verdicts, graded = self.grade("upstream", reference)
        self.assertIsNotNone(graded)
        self.assertEqual(calls, ["boot"] + plain_labs() + ["ftracetest", "docexamples",
                                                           "conformance reference", "errnos"])
        self.assertEqual((reference.corpus, reference.ftracetest_all),
                         ("upstream's corpus", {"t": "PASS"}))
        calls, _verdicts, _graded = self.grade(series.last_checkpoint(), reference)
        self.assertEqual(calls, ["boot"] + plain_labs() + ["ftracetest", "docexamples",
                                                           "conformance", "whole suite"])

    def test_a_checkpoint_without_upstreams_reference(self):
        calls, verdicts, _graded = self.grade(0, check.Reference())
        self.assertEqual(calls, ["boot"] + plain_labs(1) + ["ftracetest", "docexamples"])
        self.assertEqual(verdicts, ["conformance [cp0]: no upstream reference run to compare "
                                    "with"])

    def test_a_boot_that_failed_is_graded_no_further(self):
        calls, _verdicts, graded = self.grade(3, check.Reference(), boot_ok=False)
        self.assertEqual((calls, graded), (["boot"], None))


class BootPlan(unittest.TestCase):
    def test_labs_then_ftracetest_the_docs_examples_and_the_corpus(self):
        self.assertEqual(check.boot_plan(K.of(0)),
                         [protocol.lab_item(n) for n in plain_labs(1)]
                         + ["ftracetest", docexamples.PLAN_ITEM, conformance.PLAN_ITEM])
        for kernel in ("upstream", series.last_checkpoint()):
            self.assertEqual(check.boot_plan(K.parse(kernel)),
                             [protocol.lab_item(n) for n in plain_labs()]
                             + [conformance.FTALL_ITEM, docexamples.PLAN_ITEM,
                                conformance.PLAN_ITEM])


if __name__ == "__main__":
    unittest.main()
