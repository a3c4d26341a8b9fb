"""The kernel source the series is built on: its package and version come
from patches/BASE alone; apt is asked about exact names; another Debian
release's build of the same sources is accepted; a host that cannot give
it gets one sentence saying what is needed and what is there."""

import hashlib
import io
import os
import subprocess
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

from labkit import deps, rebase, series, source

D12 = "6.12.118-1~deb12u1"      # Debian 12's build (bookworm-security)
D13 = "6.12.118-1"              # Debian 13's build of the same sources
PKG = "linux-source-6.12"


def base_file(text):
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return mock.patch.object(series, "BASE_FILE", path)


class Base(unittest.TestCase):
    def test_a_version_alone_names_its_package(self):
        self.assertEqual(series.parse_base("# comment\n6.1.192-3\n"),
                         ("linux-source-6.1", "6.1.192-3"))
        self.assertEqual(series.parse_base(D12 + "\n"), (PKG, D12))

    def test_the_package_and_the_version(self):
        self.assertEqual(series.parse_base(f"# c\n\n{PKG} {D12}\n"), (PKG, D12))

    def test_anything_else_is_said(self):
        for text in ("", "# only a comment\n", "6.12 is the base, 6.12.118-1\n"):
            with self.assertRaises(series.SeriesError):
                series.parse_base(text)

    def test_package_of(self):
        self.assertEqual(series.package_of("6.1.192-3"), "linux-source-6.1")
        self.assertEqual(series.package_of(D12), PKG)
        self.assertEqual(series.package_of("6.12.118"), PKG)
        self.assertEqual(series.package_of("6.10~rc3-1~exp1"), "linux-source-6.10")

    def test_the_repositorys_base(self):
        package, version = series.base()
        self.assertEqual(package, series.package_of(version))

    def test_every_user_of_the_package_reads_it_from_base(self):
        with base_file(f"{PKG} {D12}\n"):
            self.assertEqual(series.base_package(), PKG)
            self.assertEqual(series.base_version(), D12)
            with mock.patch.object(source.subprocess, "run", return_value=subprocess.
                                   CompletedProcess([], 0, "", "")) as run:
                source.installed_version()
                source.offered_versions()
        self.assertEqual([c.args[0][-1] for c in run.call_args_list], [PKG, PKG])


class SameBuild(unittest.TestCase):
    def test_other_releases_builds_of_the_same_sources(self):
        for a, b in ((D12, D13), (D13, D13), ("6.12.118-1+deb13u1", D12),
                     ("6.12.118-1~bpo12+1", D13), ("6.1.192-3", "6.1.192-3")):
            self.assertTrue(source.same_build(a, b), (a, b))

    def test_another_revision_or_upstream_version(self):
        for a, b in ((D12, "6.12.118-2"), (D12, "6.12.117-1~deb12u1"), (D13, "6.12.57-1"),
                     ("6.1.192-3", "6.1.192-2")):
            self.assertFalse(source.same_build(a, b), (a, b))


class Choose(unittest.TestCase):
    """source.choose() on hosts of several kinds, each told by what dpkg
    has installed and what apt offers."""

    def choose(self, base, installed=None, offered=(), fetchable=None, tarball_exists=True):
        build = tempfile.mkdtemp()
        fetched = []

        def fetch(build_dir, version, package=None):
            if fetchable is not None and version not in fetchable:
                raise source.SourceError(f"apt-get download {package}={version} failed")
            fetched.append(version)
            return f"/cache/{version}.tar.xz"
        exists = os.path.exists
        with base_file(base + "\n"), \
                mock.patch.object(source, "installed_version", return_value=installed), \
                mock.patch.object(source, "offered_versions", return_value=list(offered)), \
                mock.patch.object(source, "fetch", side_effect=fetch), \
                mock.patch.object(source, "_has_apt", return_value=True), \
                mock.patch.object(source.os.path, "exists",
                                  side_effect=lambda p: tarball_exists if p.startswith("/usr/src/")
                                  else exists(p)):
            return source.choose(build), fetched

    def test_debian_12_with_the_version_installed(self):
        src, fetched = self.choose(f"{PKG} {D12}", installed=D12, offered=[D12])
        self.assertEqual((src.version, src.tarball, src.note), (D12, "/usr/src/linux-source-6.12.tar.xz", ""))
        self.assertEqual(fetched, [])

    def test_debian_13s_build_installed_is_accepted(self):
        src, fetched = self.choose(f"{PKG} {D12}", installed=D13, offered=[D13])
        self.assertEqual((src.version, src.package, src.note), (D13, PKG, ""))
        self.assertEqual(fetched, [])
        line = source.describe(src, (PKG, D12))
        self.assertIn(f"series made for {D12}", line)
        self.assertIn(f"found {D13} (installed)", line)

    def test_debian_13_fetches_its_build_when_none_is_installed(self):
        src, fetched = self.choose(f"{PKG} {D12}", offered=[D13, "6.12.57-1"])
        self.assertEqual((src.version, fetched), (D13, [D13]))

    def test_the_exact_version_first(self):
        src, fetched = self.choose(f"{PKG} {D12}", installed="6.12.57-1",
                                   offered=["6.12.120-1~deb12u1", D12, "6.12.57-1"])
        self.assertEqual((src.version, fetched), (D12, [D12]))

    def test_another_upstream_version_installed_is_refused(self):
        with self.assertRaises(source.SourceError) as e:
            self.choose(f"{PKG} {D12}", installed="6.12.57-1", offered=["6.12.57-1"])
        said = str(e.exception)
        self.assertNotIn("\n", said)
        for words in (f"{PKG} {D12} (patches/BASE)", "6.12.118-1", "6.12.57-1 installed",
                      "only 6.12.57-1 offered by apt"):
            self.assertIn(words, said)

    def test_the_issue_debian_13_and_a_61_series(self):
        """trixie has no linux-source-6.1: a sentence, not apt's pattern."""
        with self.assertRaises(source.SourceError) as e:
            self.choose("6.1.192-3", installed=None, offered=[])
        said = str(e.exception)
        self.assertNotIn("\n", said)
        self.assertIn("linux-source-6.1 6.1.192-3", said)
        self.assertIn("no linux-source-6.1 installed", said)

    def test_another_debian_revision_installed_with_a_warning(self):
        src, _ = self.choose("6.1.192-3", installed="6.1.192-2", offered=[], fetchable=[])
        self.assertEqual(src.version, "6.1.192-2")
        self.assertIn("6.1.192-3", src.note)

    def test_61_as_today(self):
        src, fetched = self.choose("6.1.192-3", installed="6.1.192-3", offered=["6.1.192-3"])
        self.assertEqual((src.version, src.tarball, fetched),
                         ("6.1.192-3", "/usr/src/linux-source-6.1.tar.xz", []))
        src, fetched = self.choose("6.1.192-3", installed="6.1.190-1",
                                   offered=["6.1.192-3", "6.1.190-1"])
        self.assertEqual((src.version, fetched), ("6.1.192-3", ["6.1.192-3"]))

    def test_a_host_without_apt_or_dpkg(self):
        build = tempfile.mkdtemp()
        with base_file(f"{PKG} {D12}\n"), \
                mock.patch.object(source.subprocess, "run", side_effect=FileNotFoundError), \
                mock.patch.object(deps, "host_name", return_value="this host (Fedora Linux 41)"):
            with self.assertRaises(source.SourceError) as e:
                source.choose(build)
        said = str(e.exception)
        self.assertNotIn("\n", said)
        self.assertIn("Fedora Linux 41", said)
        self.assertIn(f"{PKG} {D12}", said)
        self.assertIn("no apt and no dpkg", said)


class ExactNames(unittest.TestCase):
    """apt is asked about one exact name: madison's lines of other
    packages are not taken, and the download names package=version."""

    def test_madison(self):
        out = (f"{PKG} | {D12} | http://deb.debian.org/debian-security bookworm-security/main\n"
               "linux-source-6.1 | 6.1.192-3 | http://deb.debian.org/debian bookworm/main\n")
        with mock.patch.object(source.subprocess, "run", return_value=subprocess.
                               CompletedProcess([], 0, out, "")) as run, \
                mock.patch.object(source, "VersionKey", side_effect=lambda v: v):
            self.assertEqual(source.offered_versions("linux-source-6.1"), ["6.1.192-3"])
        self.assertEqual(run.call_args.args[0], ["apt-cache", "madison", "linux-source-6.1"])

    def test_download(self):
        build = tempfile.mkdtemp()
        calls = []

        def run(cmd, **kw):
            calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 100, "", "E: Can't find a source")
        with mock.patch.object(source, "installed_version", return_value=None), \
                mock.patch.object(source.subprocess, "run", side_effect=run), \
                redirect_stdout(io.StringIO()):
            with self.assertRaises(source.SourceError):
                source.fetch(build, D12)
        self.assertEqual(calls, [["apt-get", "download", "-q", f"{PKG}={D12}"]])


class Deps(unittest.TestCase):
    """make lab as root on a host that lacks a package: apt-get install
    never gets a name apt does not know (it would take it as a pattern),
    and an install that leaves a package missing says which."""

    def test_unknown_names_are_said_not_installed(self):
        calls = []

        def run(cmd, **kw):
            calls.append(cmd)
            out = "gdb | 13.1-3 | http://deb.debian.org/debian bookworm/main amd64 Packages\n"
            return subprocess.CompletedProcess(cmd, 0, out if "madison" in cmd else "", "")
        err = io.StringIO()
        with mock.patch.object(deps.subprocess, "run", side_effect=run), \
                mock.patch.object(deps, "host_name", return_value="this host (Debian 13)"), \
                redirect_stderr(err), redirect_stdout(io.StringIO()):
            self.assertFalse(deps.install(["gdb", "linux-source-6.1"]))
        self.assertEqual([c[:2] for c in calls], [["apt-get", "update"], ["apt-cache", "madison"]])
        self.assertIn("this host (Debian 13) has no package named linux-source-6.1", err.getvalue())

    def test_still_missing_after_the_install_is_said(self):
        err = io.StringIO()
        with mock.patch.object(deps, "check_dpkg"), \
                mock.patch.object(deps.os, "geteuid", return_value=0), \
                mock.patch.object(deps, "missing", side_effect=[["pandoc"], ["pandoc"]]), \
                mock.patch.object(deps, "install", return_value=True), \
                redirect_stderr(err), redirect_stdout(io.StringIO()):
            self.assertFalse(deps.ensure(("pandoc",)))
        self.assertIn("still not installed: pandoc", err.getvalue())


class Rebase(unittest.TestCase):
    def test_base_text_keeps_its_form(self):
        with base_file("# the base\n6.1.192-3\n"):
            self.assertEqual(rebase.base_text(D12), f"# the base\n{D12}\n")
        with base_file("# the base\nlinux-source-6.1 6.1.192-3\n# end\n"):
            self.assertEqual(rebase.base_text(D12), f"# the base\n{PKG} {D12}\n# end\n")

    def test_base_text_drops_the_old_versions_fetch_line(self):
        with base_file(f"{PKG} {D12}\nfetch http://x/a.deb sha256:00\n"):
            self.assertEqual(rebase.base_text("6.12.120-1~deb12u1"),
                             f"{PKG} 6.12.120-1~deb12u1\n")


class PinnedFetch(unittest.TestCase):
    """patches/BASE's fetch line: the exact .deb from the archive's pool,
    for a host whose apt does not offer it (Debian 13's lists)."""

    URL = "http://deb.debian.org/debian-security/pool/updates/main/l/linux-6.12/x.deb"

    def base(self, sha):
        return base_file(f"{PKG} {D12}\nfetch {self.URL} sha256:{sha}\n")

    def test_the_line_is_read_and_the_version_line_still_first(self):
        with self.base("ab12"):
            self.assertEqual(series.base(), (PKG, D12))
            self.assertEqual(series.base_fetch(), (self.URL, "ab12"))
        with base_file(f"{PKG} {D12}\n"):
            self.assertIsNone(series.base_fetch())

    def test_used_when_apt_offers_no_build_of_the_sources(self):
        build = tempfile.mkdtemp()
        got = []

        def download(build_dir, version, url, sha256, package=None):
            got.append((version, url, sha256))
            return "/cache/pinned.tar.xz"
        with self.base("ab12"), \
                mock.patch.object(source, "installed_version", return_value=None), \
                mock.patch.object(source, "offered_versions", return_value=["6.12.117-1"]), \
                mock.patch.object(source, "download", side_effect=download):
            src = source.choose(build)
        self.assertEqual((src.version, src.tarball, src.note), (D12, "/cache/pinned.tar.xz", ""))
        self.assertEqual(got, [(D12, self.URL, "ab12")])

    def test_a_wrong_checksum_is_said_and_nothing_kept(self):
        build = tempfile.mkdtemp()
        body = b"not the package"

        class Reply(io.BytesIO):
            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False
        with mock.patch.object(source.urllib.request, "urlopen", return_value=Reply(body)):
            with self.assertRaises(source.SourceError) as e:
                source.download(build, D12, self.URL, "00" * 32, PKG)
        self.assertIn(hashlib.sha256(body).hexdigest(), str(e.exception))
        self.assertIn("patches/BASE records", str(e.exception))
        self.assertEqual(os.listdir(source.cache_dir(build, D12)), [])

    def test_the_repositorys_base_pins_its_version(self):
        url, sha = series.base_fetch()
        self.assertIn(series.base_version().replace("~", "%7e"), url)
        self.assertRegex(sha, r"^[0-9a-f]{64}$")


class SeriesVersions(unittest.TestCase):
    """make check's probe of the next Debian update asks about the base's
    own package."""

    def test_the_bases_package_and_its_newest_version(self):
        from types import SimpleNamespace
        from labkit import check, ui
        asked, lines = [], []
        tally = SimpleNamespace(record=lambda ok, title, extra="": lines.append(title),
                                skip=lambda title, why: lines.append(title))
        with base_file(f"{PKG} {D12}\n"), \
                mock.patch.object(check.source, "offered_versions",
                                  side_effect=lambda p: asked.append(p) or ["6.12.120-1~deb12u1", D12]), \
                mock.patch.object(check.rebase, "applies", return_value=(True, "all apply")), \
                mock.patch.object(ui, "step"):
            check.series_versions(SimpleNamespace(build_dir="/b"), tally)
        self.assertEqual(asked, [PKG])
        self.assertEqual(lines, [f"series applies to {PKG} {D12} (patches/BASE)",
                                 f"series applies to {PKG} 6.12.120-1~deb12u1 (newest in the archive)"])


class FrontDoor(unittest.TestCase):
    """The issue's run: make lab 1 on Debian 13 with a series on 6.1 ends
    with the sentence, not with exit code 2 and no word."""

    def test_make_lab_says_what_it_needs_and_found(self):
        import ftlab
        err = io.StringIO()
        with base_file("6.1.192-3\n"), \
                mock.patch.object(deps, "require"), mock.patch.object(deps, "check_machine"), \
                mock.patch.object(source, "installed_version", return_value=None), \
                mock.patch.object(source, "offered_versions", return_value=[]), \
                mock.patch.object(source, "_has_apt", return_value=True), \
                mock.patch.object(deps, "host_name",
                                  return_value="this host (Debian GNU/Linux 13 (trixie))"), \
                redirect_stderr(err), redirect_stdout(io.StringIO()):
            rc = ftlab.main(["lab", "1", "--build-dir", tempfile.mkdtemp()])
        self.assertEqual(rc, 1)
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("Debian GNU/Linux 13 (trixie)) cannot give the series its kernel source",
                      lines[0])
        self.assertIn("linux-source-6.1 6.1.192-3", lines[0])

    def test_make_deps_says_whether_the_source_can_be_had(self):
        import ftlab
        out, err = io.StringIO(), io.StringIO()
        with base_file(f"{PKG} {D12}\n"), mock.patch.object(deps, "ensure", return_value=True), \
                mock.patch.object(source, "installed_version", return_value=None), \
                mock.patch.object(source, "offered_versions", return_value=[D13]), \
                redirect_stderr(err), redirect_stdout(out):
            rc = ftlab.main(["deps", "--build-dir", tempfile.mkdtemp()])
        self.assertEqual(rc, 0)
        self.assertIn(f"apt offers {PKG} {D13} (the series was made for {D12})",
                      out.getvalue() + err.getvalue())


if __name__ == "__main__":
    unittest.main()
