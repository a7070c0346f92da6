"""`diff --format markdown` and `status --format markdown`: the summary a CI job
posts as a pull request comment, read back through a CommonMark parser with
GFM tables (markdown-it-py), as a forge renders it."""
from __future__ import annotations

import re

import lance
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from markdown_it import MarkdownIt

from conftest import git

CAP = 65536


def render(md: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(md)


def rows_of(html: str) -> list[list[str]]:
    """The first table's body rows, each cell's text without its tags."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        out.append([re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", tr, re.S)])
    return out


def unescape(s: str) -> str:
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


def table(n: int) -> pa.Table:
    return pa.table({"id": list(range(n)), "v": [f"r{i}" for i in range(n)]})


@pytest.fixture
def dataset(tmp_path, tether, env):
    """A dataset of a directory, a git repository, a Delta table and a Lance
    dataset, committed once, then each changed and the change committed."""
    stores = tmp_path / "stores"
    raw = stores / "raw"
    raw.mkdir(parents=True)
    (raw / "keep.csv").write_text("a\n")
    (raw / "gone.csv").write_text("b\n")
    code = stores / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code, env=env)
    (code / "etl.py").write_text("print(1)\n")
    git("add", ".", cwd=code, env=env)
    git("commit", "-q", "-m", "one", cwd=code, env=env)
    write_deltalake(str(stores / "sales.delta"), table(4))
    lance.write_dataset(table(3), str(stores / "emb.lance"))
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    tether("init", cwd=ds)
    tether("add", "raw", str(raw), "--kind", "file", "--file", "versioned", cwd=ds)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("add", "sales", str(stores / "sales.delta"), "--kind", "delta", cwd=ds)
    tether("add", "emb", str(stores / "emb.lance"), "--kind", "lance", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    (raw / "keep.csv").write_text("a\nc\n")
    (raw / "gone.csv").unlink()
    (raw / "a|b <c>_d.csv").write_text("x\n")
    (code / "etl.py").write_text("print(2)\n")
    git("commit", "-q", "-am", "two", cwd=code, env=env)
    write_deltalake(str(stores / "sales.delta"), table(2), mode="append")
    lance.write_dataset(table(2), str(stores / "emb.lance"), mode="append")
    tether("pull", cwd=ds)
    return ds


def test_diff_markdown_has_a_row_per_changed_object_and_folds_the_entries(dataset, tether):
    md = tether("diff", "HEAD~1", "HEAD", "--content", "--format", "markdown", cwd=dataset).stdout
    html = render(md)
    described = {e["key"]: e for e in tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=dataset)}
    rows = {r[0]: r for r in rows_of(html)}
    assert set(rows) == {"code", "emb", "raw", "sales"}
    assert [rows[k][1] for k in ("code", "emb", "raw", "sales")] == ["git", "lance", "file", "delta"]
    assert all(r[2] == "changed" for r in rows.values())
    # old -> new state, in each kind's own short form
    assert re.fullmatch(r"[0-9a-f]{12} → [0-9a-f]{12}", rows["code"][3]), rows["code"]
    assert rows["sales"][3] == "version 0 → version 1"
    assert rows["emb"][3] == "version 1 → version 2"
    assert re.fullmatch(r"dir, 2 files, 4 B, [0-9a-f]{12} → dir, 2 files, 6 B, [0-9a-f]{12}", rows["raw"][3])
    # the content column is the native diff's summary, the same as --json's
    for key, r in rows.items():
        assert unescape(r[4]) == described[key]["detail"]["summary"], key
    # each object's entries under its own <details>, the hostile name kept as text
    assert html.count("<details>") == 4 and md.count("</details>") == 4
    raw = md.split("<details><summary><code>raw</code>", 1)[1].split("</details>", 1)[0]
    raw_rows = rows_of(render(raw.split("</summary>", 1)[1]))
    assert sorted((c, unescape(p)) for c, p, _ in raw_rows) == [
        ("added", "a|b <c>_d.csv"), ("modified", "keep.csv"), ("removed", "gone.csv")]
    assert "<c>" not in html  # never raw HTML from a file's name


def test_diff_markdown_says_what_moved_without_a_state_change_and_what_was_added(dataset, tether, tmp_path):
    tether("remove", "emb", cwd=dataset)
    other = tmp_path / "stores" / "more"
    other.mkdir()
    (other / "f").write_text("1")
    tether("add", "more", str(other), "--kind", "file", cwd=dataset)
    tether("commit", "-m", "swap", cwd=dataset)
    rows = {r[0]: r for r in rows_of(render(
        tether("diff", "HEAD~1", "HEAD", "--format", "markdown", cwd=dataset).stdout))}
    assert set(rows) == {"emb", "more"}
    assert rows["emb"][2] == "removed" and rows["emb"][3] == "version 2 → (none)"
    assert rows["more"][2] == "added" and rows["more"][3].startswith("(none) → dir, 1 file, 1 B, ")
    md = tether("diff", "HEAD", "HEAD", "--format", "markdown", cwd=dataset).stdout
    assert "No object changed (4 unchanged)." in md


def test_diff_markdown_is_cut_to_a_comment_and_says_so(tmp_path, tether, env):
    big = tmp_path / "big"
    big.mkdir()
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    tether("init", cwd=ds)
    tether("add", "big", str(big), "--kind", "file", "--file", "versioned", cwd=ds)
    tether("commit", "-m", "empty", cwd=ds)
    for i in range(1500):
        (big / f"{'long-file-name-' * 3}{i:05d}.parquet").write_text(str(i))
    tether("pull", cwd=ds)
    md = tether("diff", "HEAD~1", "HEAD", "--content", "--format", "markdown", cwd=ds).stdout
    assert len(md) <= CAP
    assert md.rstrip().endswith("_Cut to fit a comment (65536 characters): the details of 1 more object are "
                                "not shown; `tether diff --content` lists them._"), md[-400:]
    assert rows_of(render(md))[0][0] == "big"  # the table stays
    # --limit keeps it short enough to fold the entries after all
    md = tether("diff", "HEAD~1", "HEAD", "--content", "--format", "markdown", "--limit", "5", cwd=ds).stdout
    assert "Cut to fit" not in md and "1495 more not shown (`--limit`)." in md


def test_status_markdown_lists_what_is_not_clean(dataset, tether, tmp_path):
    md = tether("status", "--format", "markdown", cwd=dataset).stdout
    assert "Every object is clean (4)." in md
    (tmp_path / "stores" / "raw" / "new.csv").write_text("n\n")
    write_deltalake(str(tmp_path / "stores" / "sales.delta"), table(1), mode="append")
    md = tether("status", "--snapshot", "--format", "markdown", cwd=dataset).stdout
    assert md.startswith("### tether status: dataset ")
    assert "2 objects not clean; 2 clean." in md
    rows = {r[0]: r for r in rows_of(render(md))}
    assert rows == {"raw": ["raw", "file", "observed", "behind", "unrecoverable"],
                    "sales": ["sales", "delta", "addressable", "behind", ""]}
    # a store that cannot be read: its row says why, and status exits 1 as in text
    emb = tmp_path / "stores" / "emb.lance"
    emb.rename(emb.with_suffix(".away"))
    proc = tether("status", "--snapshot", "--format", "markdown", cwd=dataset, check=False)
    assert proc.returncode == 1
    emb = {r[0]: r for r in rows_of(render(proc.stdout))}["emb"]
    assert emb[3] == "error" and emb[4].startswith("error: "), emb


@pytest.mark.parametrize("cmd", ["diff", "status"])
def test_format_refusals_are_usage_errors(dataset, tether, cmd):
    for args in (["--format", "html"], ["--format", "markdown", "--json"]):
        proc = tether(cmd, *args, cwd=dataset, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "--format" in proc.stderr
    # the two runs may straddle a second: "fingerprinted 0s ago" / "1s ago"
    def same(text):
        return re.sub(r"\b\d+[smhd] ago\b", "N ago", text)
    assert same(tether(cmd, "--format", "text", cwd=dataset).stdout) == same(tether(cmd, cwd=dataset).stdout)

