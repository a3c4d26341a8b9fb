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
goal: walk p->next while
  n stays under the limit.
hint 1: p->next.
hint 2: count, then
  step.
hint 3: n++, p = p->next.

hole 2: reset a probe
file: kernel/trace/x.c
function: reset_probe
goal: both fields.
hint 1: hits and next.

hole 3: the first probe
file: kernel/trace/x.c
function: first_probe
points: 3
goal: the list's head.
hint 1: list.
"""


class Parse(unittest.TestCase):
    def test_fields_and_continuation(self):
        h = holes.parse(HOLES)
        self.assertEqual([x.number for x in h], [1, 2, 3])
        self.assertEqual(h[0].title, "count the hits")
        self.assertEqual(h[0].start_marker, "/* Walk the list. */")
        self.assertEqual(h[0].checks, ["hits", "limit"])
        self.assertEqual(h[0].goal, "walk p->next while n stays under the limit.")
        self.assertIsNone(h[1].start_marker)
        self.assertEqual(h[2].points, "3")

    def test_errors_name_the_line(self):
        for text, words in (("hole 2: x\nfile: f\nfunction: g\ngoal: h\nhint 1: i\n",
                             "hole 1 should"),
                            ("hole 1: x\nfile: f\nfunction: g\n", "no goal"),
                            ("hole 1: x\nfile: f\nfunction: g\ngoal: h\nhint 1: i\nfrom: a\n",
                             "go together"),
                            ("hole 1: x\nfiel: f\nfunction: g\ngoal: h\nhint 1: i\n", "holes:2"),
                            ("hole: x\n", "hole K: title")):
            with self.assertRaises(holes.HolesError) as e:
                holes.parse(text)
            self.assertIn(words, str(e.exception))


class Levels(unittest.TestCase):
    """A hole has a goal (what its TODO comment says) and hints in levels."""

    def test_goal_and_levels_parsed_in_order(self):
        h = holes.parse(HOLES)
        self.assertEqual(h[0].hints, ["p->next.", "count, then step.", "n++, p = p->next."])
        self.assertEqual(h[1].hints, ["hits and next."])
        self.assertEqual(h[2].goal, "the list's head.")

    def test_a_hole_without_a_goal_names_its_file_and_line(self):
        text = HOLES.replace("goal: both fields.\n", "")
        with self.assertRaises(holes.HolesError) as e:
            holes.parse(text, "exercises/03-x/holes")
        self.assertIn("exercises/03-x/holes:15: hole 2 has no goal", str(e.exception))

    def test_the_old_single_hint_is_refused(self):
        with self.assertRaises(holes.HolesError) as e:
            holes.parse("hole 1: x\nfile: f\nfunction: g\nhint: h\n", "ex/holes")
        self.assertIn("ex/holes:4: 'hint:' is no field", str(e.exception))

    def test_levels_start_at_1_without_a_gap(self):
        for levels in ("", "hint 2: b\n", "hint 1: a\nhint 3: c\n"):
            with self.subTest(levels=levels):
                with self.assertRaises(holes.HolesError) as e:
                    holes.parse("hole 1: x\nfile: f\nfunction: g\ngoal: h\n" + levels)
                self.assertIn("holes:1: hole 1: its hints are levels", str(e.exception))

    def test_the_todo_comment_shows_the_goal_and_no_hint(self):
        skel = holes.skeleton({"kernel/trace/x.c": C_FILE}, 3, holes.parse(HOLES))
        text = skel["kernel/trace/x.c"]
        self.assertIn("TODO(lab 3.1): count the hits. walk p->next while n stays under", text)
        self.assertNotIn("n++, p = p->next.", text)
        self.assertNotIn("hits and next.", text)


TWIN = """\
hole 1: the first probe
file: kernel/trace/x.c
function: first_probe
also: reset_probe
goal: the list's head.
hint 1: list.
"""


class Twins(unittest.TestCase):
    """'also:' takes a twin's body out with the hole's, and puts it back."""

    def setUp(self):
        self.ref = {"kernel/trace/x.c": C_FILE}

    def test_the_twin_s_body_goes_with_a_todo_that_points_to_the_hole(self):
        h = holes.parse(TWIN)
        self.assertEqual(h[0].functions(), ["first_probe", "reset_probe"])
        skel = holes.skeleton(self.ref, 3, h)["kernel/trace/x.c"]
        self.assertNotIn("p->hits = 0", skel)
        self.assertNotIn("return list;", skel)
        self.assertIn("TODO(lab 3.1) too: the first probe. This body is part of the hole:\n",
                      skel)
        # the goal's comment is the one make exercise lists
        self.assertEqual(len(holes.todo_sites(skel, 3, h[0])), 1)
        self.assertIn("TODO(lab 3.1): the first probe. the list's head.",
                      skel.split("\n")[holes.todo_sites(skel, 3, h[0])[0] - 1])
        self.assertEqual(holes.fill(skel, C_FILE, h), C_FILE)

    def test_todo_k_keeps_the_twin_of_a_prefilled_hole(self):
        h = holes.parse(TWIN + "\n" + HOLES.split("\n\n")[0].replace("hole 1:", "hole 2:"))
        skel = holes.skeleton(self.ref, 3, h, todo=2)["kernel/trace/x.c"]
        self.assertIn("p->hits = 0", skel)
        self.assertIn("return list;", skel)
        self.assertNotIn("n++", skel)

    def test_a_function_in_two_holes_is_refused(self):
        h = holes.parse(TWIN + "\n" + HOLES.split("\n\n")[1].replace("hole 2:", "hole 2:"))
        with self.assertRaises(holes.HolesError) as e:
            holes.skeleton(self.ref, 3, h)
        self.assertIn("reset_probe in two holes", str(e.exception))


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
                        "stub: return limit;\ngoal: h\nhint 1: i\n")
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
                        "from: /* nowhere */\nto: /* Report. */\ngoal: h\nhint 1: i\n")
        with self.assertRaises(holes.HolesError) as e:
            holes.skeleton(self.ref, 3, h)
        self.assertIn("'/* nowhere */' not found", str(e.exception))

    def test_only_kernel_trace(self):
        h = holes.parse("hole 1: t\nfile: include/linux/x.h\nfunction: f\ngoal: h\nhint 1: i\n")
        with self.assertRaises(holes.HolesError):
            holes.skeleton({"include/linux/x.h": "int f(void)\n{\n}\n"}, 3, h)


if __name__ == "__main__":
    unittest.main()
