"""The harness's layers: which module of scripts/labkit may import which.

LAYERS puts every module in one layer, bottom to top. A module imports
modules of the layers below its own, and of its own layer as long as
that makes no import cycle; never one above. The judges are functions of
what a kernel printed (and of the patches' text): the machines that pack
or drive a guest use them (initramfs packs the docs' examples and the
ftracetest list, gdbrun grades gdb's output), so they sit below the
machines. The report page reads traces and grade and is written by make
lab, so it sits below the runner; the runner never imports a product.

Every import counts, the ones inside a function too: "from . import x"
and "from .x import y" (and the absolute "labkit.x" forms).
"""

import ast
import os
import tempfile
import unittest

LABKIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "labkit")

LAYERS = [
    ("vocabulary", "errors protocol results series kernels ui timing interrupt"),
    ("judges", "hostile grade faults ftmatrix holes conformance docexamples errnos checkpatch"),
    ("machines", "disk deps source tree qemu kbuild initramfs gdbrun traces"),
    ("pages", "report"),
    ("runner", "labrun"),
    ("products", "robust docs namecheck kshark races studentgrade rebase debug exercise "
                 "tracecheck bench mutants check"),
]

def imported(source, modules, package="labkit"):
    """The modules of 'modules' that the Python text 'source' imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found.update([node.module.split(".")[0]] if node.module
                             else (a.name for a in node.names))
            elif node.level == 0 and node.module == package:
                found.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith(package + "."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith(package + "."))
    return found & set(modules)


def import_graph(folder):
    """{module: the modules of the folder it imports} of a package folder."""
    modules = {f[:-3] for f in os.listdir(folder) if f.endswith(".py") and f != "__init__.py"}
    graph = {}
    for name in sorted(modules):
        with open(os.path.join(folder, name + ".py"), encoding="utf-8") as f:
            graph[name] = imported(f.read(), modules) - {name}
    return graph


def cycles(graph):
    """One cycle, [a, b, ..., a], per group of modules that import each
    other (strongly connected components, Tarjan), sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(m):
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in sorted(graph.get(m, ())):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            group = set()
            while True:
                n = stack.pop()
                on_stack.discard(n)
                group.add(n)
                if n == m:
                    break
            if len(group) > 1:
                groups.append(group)

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return sorted(_loop(graph, group) for group in groups)


def _loop(graph, group):
    """The shortest cycle through the group's first module, inside the group."""
    start = min(group)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for n in sorted(graph[path[-1]] & group):
            if n == start:
                return path + [start]
            if n not in seen:
                seen.add(n)
                paths.append(path + [n])
    raise AssertionError(f"no cycle in {sorted(group)}")


def problems(graph, layers):
    """What breaks the layers, one sentence each: a module in no layer or
    in two, a layer's module that does not exist, an import of a module
    of a higher layer, an import cycle."""
    out, rank = [], {}
    for height, (layer, names) in enumerate(layers):
        for name in names.split():
            if name in rank:
                out.append(f"{name} is in two layers: {layers[rank[name]][0]} and {layer}")
            rank[name] = height
    out += [f"{m} is in no layer of LAYERS" for m in sorted(set(graph) - set(rank))]
    out += [f"LAYERS names {m}, which is no module" for m in sorted(set(rank) - set(graph))]
    for m in sorted(graph):
        for n in sorted(graph[m]):
            if m in rank and n in rank and rank[n] > rank[m]:
                out.append(f"{m} ({layers[rank[m]][0]}) imports {n} ({layers[rank[n]][0]}), "
                           "a higher layer")
    out += ["import cycle: " + " -> ".join(c) for c in cycles(graph)]
    return out


class Harness(unittest.TestCase):
    def test_every_module_keeps_to_its_layer_with_no_cycle(self):
        found = problems(import_graph(LABKIT), LAYERS)
        self.assertEqual(found, [], "\n" + "\n".join(found))


# A stand-in package for the checker's own tests: bottom < middle < top.
STANDIN = [("bottom", "errors"), ("middle", "grade report"), ("top", "labrun")]


class Checker(unittest.TestCase):
    """The check fails where it must, and names what it found."""

    def test_an_import_of_a_higher_layer_is_named(self):
        graph = {"errors": set(), "grade": {"errors", "labrun"}, "report": set(),
                 "labrun": {"grade"}}
        self.assertIn("grade (middle) imports labrun (top), a higher layer",
                      problems(graph, STANDIN))

    def test_a_cycle_in_one_layer_is_named(self):
        graph = {"errors": set(), "grade": {"report"}, "report": {"grade", "errors"},
                 "labrun": {"grade"}}
        self.assertEqual(problems(graph, STANDIN), ["import cycle: grade -> report -> grade"])

    def test_imports_in_one_layer_without_a_cycle_pass(self):
        graph = {"errors": set(), "grade": {"report"}, "report": {"errors"}, "labrun": {"grade"}}
        self.assertEqual(problems(graph, STANDIN), [])

    def test_a_module_in_no_layer_or_none_in_the_code(self):
        graph = {"errors": set(), "grade": set(), "report": set(), "kshark": set()}
        self.assertEqual(problems(graph, STANDIN),
                         ["kshark is in no layer of LAYERS",
                          "LAYERS names labrun, which is no module"])

    def test_a_module_in_two_layers(self):
        self.assertIn("grade is in two layers: middle and top",
                      problems({"errors": set(), "grade": set(), "report": set()},
                               STANDIN[:2] + [("top", "grade")]))

    def test_a_planted_back_import_in_a_package_fails(self):
        """A package on disk: an import inside a function counts."""
        with tempfile.TemporaryDirectory() as folder:
            files = {"__init__.py": "from . import grade\n",
                     "errors.py": "import os\n\n\ndef late():\n    from . import grade\n"
                                  "    return grade\n",
                     "grade.py": "from .errors import os as _os\nfrom labkit import report\n",
                     "report.py": "import labkit.errors\n"}
            for name, text in files.items():
                with open(os.path.join(folder, name), "w") as f:
                    f.write(text)
            graph = import_graph(folder)
            self.assertEqual(graph, {"errors": {"grade"}, "grade": {"errors", "report"},
                                     "report": {"errors"}})
            self.assertEqual(problems(graph, STANDIN[:2]),
                             ["errors (bottom) imports grade (middle), a higher layer",
                              "import cycle: errors -> grade -> errors"])


if __name__ == "__main__":
    unittest.main()
