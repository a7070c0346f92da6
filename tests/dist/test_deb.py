"""The Debian package (`make deb`, CPack): its fields and files, then for
real on this machine: `dpkg -i`, the quickstart with the installed
/usr/bin/tether, `man tether-status`, bash completion, pkg-config, the
optional libduckdb, and `dpkg -r` leaving nothing behind.  Installing needs
root; without it those tests skip, saying so.  The package is never left
installed, and a lock keeps two runs on one machine from overlapping."""
from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TOP, VERSION, artifact, clean_env, ducklake_status, libduckdb_so, query_42, quickstart, which

DEB = f"tether_{VERSION}_amd64.deb"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="installing a .deb (dpkg -i) needs root; run as root")


def field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True).stdout.strip()


def contents(deb: Path) -> list[str]:
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    return [ln.split()[5].lstrip(".") for ln in out.splitlines()]


def relations(text: str) -> dict[str, str]:
    """'a (>= 1), b' -> {'a': '(>= 1)', 'b': ''}"""
    rel = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, ver = part.partition(" ")
        rel[name] = ver
    return rel


@pytest.fixture(scope="module")
def deb() -> Path:
    return artifact(DEB)


def test_fields_carry_the_version_and_computed_dependencies(deb):
    assert field(deb, "Package") == "tether"
    assert field(deb, "Version") == VERSION
    assert field(deb, "Architecture") == "amd64"
    depends = relations(field(deb, "Depends"))
    # dpkg-shlibdeps: the libraries the binary and libtether.so link, versioned
    for pkg in ("libc6", "libjansson4", "libb2-1", "libzstd1", "zlib1g", "libsqlite3-0"):
        assert depends.get(pkg, "").startswith("(>="), (pkg, depends)
    # looked up from the sonames loaded on first use: libcrypto hashes every file
    assert "libssl3" in depends and "git" in depends
    assert set(relations(field(deb, "Recommends"))) == {"libcurl4", "libpq5", "libmariadb3"}
    assert "duckdb" not in field(deb, "Depends") + field(deb, "Recommends")


def test_files_are_the_binary_library_headers_pc_man_pages_and_completions(deb):
    files = contents(deb)
    for path in ("/usr/bin/tether", f"/usr/lib/libtether.so.{VERSION}", "/usr/lib/libtether.so.0",
                 "/usr/lib/libtether.so", "/usr/include/tether/tether.h", "/usr/lib/pkgconfig/libtether.pc",
                 "/usr/share/man/man1/tether.1", "/usr/share/man/man1/tether-status.1",
                 "/usr/share/bash-completion/completions/tether", "/usr/share/zsh/site-functions/_tether",
                 "/usr/share/fish/vendor_completions.d/tether.fish"):
        assert path in files, path
    assert all(f.startswith("/usr/") for f in files if f != "/"), files


def dpkg(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """dpkg, waiting (up to two minutes) while apt or another dpkg holds its lock."""
    deadline = time.monotonic() + 120
    while True:
        p = subprocess.run(["dpkg", *args], capture_output=True, text=True)
        locked = "lock" in p.stderr and ("dpkg" in p.stderr or "frontend" in p.stderr)
        if not (p.returncode != 0 and locked and time.monotonic() < deadline):
            break
        time.sleep(2)
    if check and p.returncode != 0:
        raise AssertionError(f"dpkg {' '.join(args)}: {p.stderr}")
    return p


def installed() -> bool:
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "tether"], capture_output=True, text=True)
    return p.returncode == 0 and "installed" in p.stdout.split()[-1:]


@root_only
def test_install_run_read_the_man_page_complete_and_remove_leaving_nothing(deb, tmp_path):
    which("man")
    files = [f for f in contents(deb) if not f.endswith("/")]
    with open("/tmp/tether-deb-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # before: not installed, and none of its files on the machine (dpkg
        # would silently replace a file no package owns)
        assert not installed(), "a tether package is installed already: dpkg -r tether first"
        assert dpkg("-L", "tether", check=False).returncode != 0
        present = [f for f in files if os.path.lexists(f)]
        assert not present, f"files of the package exist already: {present}"
        dpkg("-i", str(deb))
        try:
            listed = dpkg("-L", "tether").stdout.split()
            assert set(files) <= set(listed), sorted(set(files) - set(listed))
            env = clean_env(tmp_path / "home")  # PATH: /usr/local/bin:/usr/bin:/bin, no checkout
            found = subprocess.run(["bash", "-c", "command -v tether"], env=env, capture_output=True,
                                   text=True).stdout.strip()
            assert found == "/usr/bin/tether"
            out = subprocess.run(["tether", "--version"], env=env, capture_output=True, text=True, check=True)
            assert out.stdout.startswith(f"tether {VERSION} ("), out.stdout
            quickstart("/usr/bin/tether", tmp_path / "demo", env)

            page = subprocess.run(["man", "-w", "tether-status"], env=env, capture_output=True, text=True)
            assert page.stdout.strip().startswith("/usr/share/man/man1/tether-status.1"), page
            text = subprocess.run(["man", "tether-status"], env={**env, "MANPAGER": "cat", "MANWIDTH": "80"},
                                  capture_output=True, text=True, check=True).stdout
            assert "tether status" in text and "--snapshot" in text, text[:500]

            comp = subprocess.run(["bash", "-c",
                                   "source /usr/share/bash-completion/completions/tether; complete -p tether; "
                                   "COMP_WORDS=(tether sta); COMP_CWORD=1; _tether; echo \"${COMPREPLY[*]}\"; "
                                   "COMP_WORDS=(tether status --sn); COMP_CWORD=2; _tether; echo \"${COMPREPLY[*]}\""],
                                  env=env, capture_output=True, text=True, check=True).stdout.splitlines()
            assert comp[0] == "complete -F _tether tether" and comp[1] == "status" and comp[2] == "--snapshot", comp

            pc = subprocess.run(["pkg-config", "--modversion", "libtether"], env=env, capture_output=True,
                                text=True, check=True).stdout.strip()
            assert pc == VERSION

            # libduckdb is optional: without it only DuckDB-file catalogs and query are refused,
            # saying what to install; given one, they work
            without = ducklake_status("/usr/bin/tether", tmp_path / "without", env)
            assert without.returncode == 1 and "install libduckdb 1.5.5" in without.stderr, without.stderr
            assert "/usr/local/lib" in without.stderr and "TETHER_LIBDUCKDB" in without.stderr
            q = query_42("/usr/bin/tether", tmp_path / "without", env)  # tether query, the same words
            assert q.returncode == 1 and "install libduckdb 1.5.5" in q.stderr, q.stdout + q.stderr
            lib = libduckdb_so()
            if lib is None:
                pytest.fail("libduckdb is missing from the tool cache (scripts/setup.sh --test fetches it)")
            given = ducklake_status("/usr/bin/tether", tmp_path / "with", {**env, "TETHER_LIBDUCKDB": str(lib)})
            assert given.returncode == 0, given.stderr
            q = query_42("/usr/bin/tether", tmp_path / "with", {**env, "TETHER_LIBDUCKDB": str(lib)})
            assert q.returncode == 0 and "42" in q.stdout.split(), q.stdout + q.stderr
        finally:
            dpkg("-r", "tether")
            removed = dpkg("-L", "tether", check=False)
            dpkg("--purge", "tether")  # (its record: -r keeps it, for postrm's purge)
        # after: dpkg -L lists nothing, nothing of it is on disk, and no record is left
        assert removed.returncode != 0 or "does not contain any files" in removed.stdout, removed.stdout
        assert not installed()
        assert dpkg("-L", "tether", check=False).returncode != 0
        assert subprocess.run(["dpkg-query", "-W", "tether"], capture_output=True).returncode != 0
        left = [f for f in listed if os.path.lexists(f) and not os.path.isdir(f)]
        assert not left, left
        gone_dirs = [d for d in listed if os.path.isdir(d) and d.startswith(("/usr/include/tether",))]
        assert not gone_dirs, gone_dirs
