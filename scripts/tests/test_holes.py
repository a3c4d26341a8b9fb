"""Holes files and skeletons: a hole is found by its function's name,
the skeleton differs from the reference only there, and putting the
reference's lines back gives the reference again."""

import unittest

from labkit import holes

C_FILE = """\
#include <linux/kernel.h>

static int helper(int x);

/* Count the hits, up to a limit. */
static int
count_hits(struct probe *p, int limit)
{
\tint n = 0;

\t/* Walk the list. */
\twhile (p && n < limit) {
\t\tn++;
\t\tp = p->next;
\t}
\t/* Report. */
\treturn n;
}

static void reset_probe(struct probe *p)
{
\tp->hits = 0;
\tp->next = NULL;
}

static struct probe *first_probe(void)
{
\treturn list;
}

static inline int register_cmds(void) { return 0; }
"""

HOLES = """\
# a comment
hole 1: count the hits
file: kernel/trace/x.c
function: count_hits
from: /* Walk the list. */
to: /* Report. */
checks: hits limit
hint: walk p->next while
  n stays under the limit.

hole 2: reset a probe
file: kernel/trace/x.c
function: reset_probe
hint: both fields.

hole 3: the first probe
file: kernel/trace/x.c
function: first_probe
points: 3
hint: the list's head.
"""


class Parse(unittest.TestCase):
    def test_fields_and_continuation(self):
        h = holes.parse(HOLES)
        self.assertEqual([x.number for x in h], [1, 2, 3])
        self.assertEqual(h[0].title, "count the hits")
        self.assertEqual(h[0].start_marker, "/* Walk the list. */")
        self.assertEqual(h[0].checks, ["hits", "limit"])
        self.assertEqual(h[0].hint, "walk p->next while n stays under the limit.")
        self.assertIsNone(h[1].start_marker)
        self.assertEqual(h[2].points, "3")

    def test_errors_name_the_line(self):
        for text, words in (("hole 2: x\nfile: f\nfunction: g\nhint: h\n", "hole 1 should"),
                            ("hole 1: x\nfile: f\nfunction: g\n", "no hint"),
                            ("hole 1: x\nfile: f\nfunction: g\nhint: h\nfrom: a\n", "go together"),
                            ("hole 1: x\nfiel: f\nfunction: g\nhint: h\n", "holes:2"),
                            ("hole: x\n", "hole K: title")):
            with self.assertRaises(holes.HolesError) as e:
                holes.parse(text)
            self.assertIn(words, str(e.exception))


class WithChecks(unittest.TestCase):
    """prove-holes.py --write rewrites one hole's checks: line, no other."""

    def test_the_hole_named_gets_the_checks_found(self):
        text = holes.with_checks(HOLES, 1, ["limit", "errors"])
        self.assertEqual(holes.parse(text)[0].checks, ["limit", "errors"])
        self.assertEqual(text.replace("checks: limit errors", "checks: hits limit"), HOLES)

    def test_another_hole_is_left_alone(self):
        text = holes.with_checks(HOLES, 3, ["hits"])
        self.assertEqual([h.checks for h in holes.parse(text)], [["hits", "limit"], [], ["hits"]])

    def test_a_hole_without_the_line_gets_one(self):
        self.assertEqual(holes.parse(holes.with_checks(HOLES, 2, ["hits"]))[1].checks, ["hits"])


class Skeleton(unittest.TestCase):
    def setUp(self):
        self.holes = holes.parse(HOLES)
        self.ref = {"kernel/trace/x.c": C_FILE}

    def test_holes_are_left_out_with_a_todo_and_a_stub(self):
        skel = holes.skeleton(self.ref, 3, self.holes)["kernel/trace/x.c"]
        self.assertNotIn("n++", skel)
        self.assertNotIn("p->hits = 0", skel)
        self.assertNotIn("return list;", skel)
        self.assertIn("\t/* Walk the list. */\n\t/*\n\t * TODO(lab 3.1): count the hits. walk",
                      skel)
        self.assertIn("\t */\n\t/* Report. */\n\treturn n;", skel)
        self.assertIn("TODO(lab 3.3): the first probe. the list's head.\n\t */\n\treturn NULL;\n}",
                      skel)
        # void: no stub; everything outside the holes stays
        self.assertIn("TODO(lab 3.2): reset a probe. both fields.\n\t */\n}", skel)
        self.assertIn("static int helper(int x);", skel)
        self.assertIn("\tint n = 0;", skel)

    def test_filling_every_hole_gives_the_reference_back(self):
        skel = holes.skeleton(self.ref, 3, self.holes)["kernel/trace/x.c"]
        self.assertNotEqual(skel, C_FILE)
        self.assertEqual(holes.fill(skel, C_FILE, self.holes), C_FILE)

    def test_todo_k_prefills_the_holes_before_k(self):
        skel = holes.skeleton(self.ref, 3, self.holes, todo=3)["kernel/trace/x.c"]
        self.assertIn("n++", skel)
        self.assertIn("p->hits = 0", skel)
        self.assertNotIn("TODO(lab 3.2)", skel)
        self.assertEqual(holes.todo_sites(skel, 3, self.holes[2]), [29])

    def test_stub_by_return_type(self):
        self.assertEqual(holes.default_stub("static int"), "return -ENOSYS;")
        self.assertEqual(holes.default_stub("static struct probe *"), "return NULL;")
        self.assertEqual(holes.default_stub("static void"), None)
        self.assertEqual(holes.default_stub("bool"), "return false;")
        self.assertEqual(holes.default_stub("static u64"), "return 0;")

    def test_a_given_stub_wins(self):
        h = holes.parse("hole 1: t\nfile: kernel/trace/x.c\nfunction: count_hits\n"
                        "stub: return limit;\nhint: h\n")
        skel = holes.skeleton(self.ref, 3, h)["kernel/trace/x.c"]
        self.assertIn("\treturn limit;\n}", skel)
        self.assertNotIn("int n = 0;", skel)

    def test_found_by_name_not_prototype_call_or_one_liner(self):
        lines = C_FILE.split("\n")
        self.assertEqual(holes.find_function(lines, "count_hits"), (6, 7, 17))
        with self.assertRaises(holes.HolesError):
            holes.find_function(lines, "helper")
        with self.assertRaises(holes.HolesError):
            holes.find_function(lines, "register_cmds")

    def test_twice_defined_is_refused(self):
        lines = (C_FILE + "#else\nstatic void reset_probe(struct probe *p)\n{\n}\n").split("\n")
        with self.assertRaises(holes.HolesError) as e:
            holes.find_function(lines, "reset_probe")
        self.assertIn("2 times", str(e.exception))

    def test_a_missing_marker_is_named(self):
        h = holes.parse("hole 1: t\nfile: kernel/trace/x.c\nfunction: count_hits\n"
                        "from: /* nowhere */\nto: /* Report. */\nhint: h\n")
        with self.assertRaises(holes.HolesError) as e:
            holes.skeleton(self.ref, 3, h)
        self.assertIn("'/* nowhere */' not found", str(e.exception))

    def test_only_kernel_trace(self):
        h = holes.parse("hole 1: t\nfile: include/linux/x.h\nfunction: f\nhint: h\n")
        with self.assertRaises(holes.HolesError):
            holes.skeleton({"include/linux/x.h": "int f(void)\n{\n}\n"}, 3, h)


if __name__ == "__main__":
    unittest.main()
