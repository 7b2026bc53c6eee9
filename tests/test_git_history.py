"""dataset=git_history: small real git repositories with hand-checked windows, lineages and queries."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from data_gen.build import write_from_config
from data_gen.git_history import (GitHistoryParams, align, git_params_from_config, split_units,
                                  strip_front_matter, write_git_history)
from data_gen.params import params_from_config
from smartvector_bench.core.dataset import DATA_FILES, load_dataset
from smartvector_bench.core.errors import BenchError

from .conftest import TINY, compose_config, run_cli

FRONT = "---\ntitle: A front matter title that is long enough to be a paragraph\nlayout: page\n---\n"
P1 = "Every new employee gets a laptop from the equipment team during the first week on the job."
P2 = "Travel requests go to the travel desk at least ten days before the trip starts, with the budget code."
P2_EDIT = "Travel requests go to the travel desk at least fourteen days before the trip starts, with the budget code."
P3 = "Questions about leave go to the human resources channel, which answers within one business day."
P4 = "Remote staff may claim a monthly internet stipend through the expense system with a receipt."
C1 = "The onboarding checklist lists the accounts a new employee needs and who grants each of them."
C2 = "Badge photos are taken at the front desk on Tuesdays and Thursdays between nine and eleven."


def _doc(*paras: str, heading: str = "# Working here", front: bool = True) -> str:
    return (FRONT if front else "") + "\n".join([heading, ""] + [p + "\n" for p in paras])


class Repo:
    """A throwaway repository whose commits have fixed dates and authors."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str = "2024-01-01 00:00:00 +0000") -> str:
        env = {"PATH": os.environ["PATH"], "HOME": str(self.path), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
               "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.org",
               "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True,
                              text=True).stdout

    def write(self, rel: str, text: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def commit(self, date: str, msg: str = "change") -> str:
        self.git("add", "-A", date=date)
        self.git("commit", "-q", "-m", msg, date=f"{date} 00:00:00 +0000")
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    r = Repo(tmp_path_factory.mktemp("git") / "repo")
    r.write("docs/a.md", _doc(P1, P2, P3))
    r.write("notes.txt", "not markdown\n")
    r.write("other/x.md", _doc(P4, heading="# Outside"))  # outside the glob: ignored
    r.commit("2024-01-01")
    r.write("docs/a.md", _doc(P1, P2_EDIT, P3))  # one paragraph edited
    r.write("other/x.md", _doc(P4, C1, heading="# Outside"))
    r.commit("2024-02-01")
    r.write("docs/a.md", _doc(P1, P2, P3))  # the edit reverted
    r.commit("2024-03-01")
    (r.path / "docs/a.md").unlink()  # renamed, one paragraph added
    r.write("docs/guide/b.md", _doc(P1, P2, P3, P4))
    r.commit("2024-04-01")
    r.write("docs/c.md", _doc(C1, C2, heading="# Onboarding", front=False))
    r.commit("2024-05-01")
    r.git("rm", "-q", "docs/c.md")  # deleted: its windows close
    r.commit("2024-06-01")
    r.write("notes.txt", "still not markdown\n")  # the tip touches no matching file
    r.commit("2024-07-01")
    return r


def _cfg(r: Repo, **over) -> dict:
    cfg = {"name": "git_history", "path": None, "repo": str(r.path), "glob": "docs/**/*.md", "seed": 3,
           "min_chars": 20, "min_query_words": 3, "recent_days": 150,
           "queries": {"current": 5, "historical": 5, "recently_updated": 5}}
    cfg.update(over)
    return cfg


def _read(folder: Path) -> dict:
    def jsonl(name):
        return [json.loads(line) for line in (folder / name).read_text().splitlines()]

    qrels = {}
    for split in ("dev", "test"):
        for line in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
            q, c, g = line.split("\t")
            qrels.setdefault(q, []).append((c, int(g)))
    return {"corpus": {r["_id"]: r for r in jsonl("corpus.jsonl")}, "queries": jsonl("queries.jsonl"),
            "qrels": qrels, "lab_chunks": {r["_id"]: r for r in jsonl("labels/chunks.jsonl")},
            "lab_queries": {r["_id"]: r for r in jsonl("labels/queries.jsonl")},
            "manifest": json.loads((folder / "manifest.json").read_text())}


@pytest.fixture(scope="module")
def built(repo, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("out") / "ds"
    write_from_config(_cfg(repo), out)
    return out, _read(out)


def _by_text(corpus: dict, text: str) -> list[dict]:
    return sorted((r for r in corpus.values() if r["text"] == text), key=lambda r: r["metadata"]["valid_from"])


def test_windows_lineages_and_ids_by_hand(built):
    _, ds = built
    corpus, fam = ds["corpus"], ds["lab_chunks"]
    # An unchanged paragraph keeps one chunk over all versions (edit, revert, rename).
    (p1,) = _by_text(corpus, P1)
    assert p1["metadata"]["valid_from"] == "2024-01-01T00:00:00Z"
    assert p1["metadata"]["valid_to"] is None and p1["metadata"]["version"] == 1
    assert p1["metadata"]["supersedes"] is None and p1["title"] == "docs/a.md: Working here"
    (p3,) = _by_text(corpus, P3)
    assert p3["metadata"]["valid_to"] is None
    # The edited paragraph: the old window closes at the edit, the new chunk supersedes it; the revert is a
    # third chunk of the same lineage (same text as the first).
    v1, v3 = _by_text(corpus, P2)
    (v2,) = _by_text(corpus, P2_EDIT)
    assert (v1["metadata"]["valid_from"], v1["metadata"]["valid_to"]) == ("2024-01-01T00:00:00Z",
                                                                          "2024-02-01T00:00:00Z")
    assert (v2["metadata"]["valid_from"], v2["metadata"]["valid_to"]) == ("2024-02-01T00:00:00Z",
                                                                          "2024-03-01T00:00:00Z")
    assert (v3["metadata"]["valid_from"], v3["metadata"]["valid_to"]) == ("2024-03-01T00:00:00Z", None)
    assert v2["metadata"]["supersedes"] == v1["_id"] and v3["metadata"]["supersedes"] == v2["_id"]
    assert [v["metadata"]["version"] for v in (v1, v2, v3)] == [1, 2, 3]
    assert fam[v1["_id"]]["family"] == fam[v2["_id"]]["family"] == fam[v3["_id"]]["family"]
    assert fam[p1["_id"]]["family"] != fam[v1["_id"]]["family"]
    # The rename keeps the doc_id; the paragraph added with it is a new lineage of version 4, titled by the
    # new path; the file outside the glob (other/x.md has P4 too) is not in the corpus.
    (p4,) = _by_text(corpus, P4)
    assert p4["metadata"]["doc_id"] == p1["metadata"]["doc_id"] == v3["metadata"]["doc_id"]
    assert p4["metadata"]["version"] == 4 and p4["title"] == "docs/guide/b.md: Working here"
    assert p4["metadata"]["valid_from"] == "2024-04-01T00:00:00Z" and p4["metadata"]["supersedes"] is None
    # The deleted file: both windows close at the deletion, in a document of its own.
    c1, c2 = _by_text(corpus, C1) + _by_text(corpus, C2)
    for c in (c1, c2):
        assert (c["metadata"]["valid_from"], c["metadata"]["valid_to"]) == ("2024-05-01T00:00:00Z",
                                                                            "2024-06-01T00:00:00Z")
    assert c1["metadata"]["doc_id"] == c2["metadata"]["doc_id"] != p1["metadata"]["doc_id"]
    assert c1["title"] == "docs/c.md: Onboarding"
    # Front matter, headings and files outside the glob are no chunks; 8 chunks in all.
    assert len(corpus) == 8 and not any("front matter" in r["text"] or r["text"].startswith("#")
                                        for r in corpus.values())
    for r in corpus.values():
        m = r["metadata"]
        assert m["source"] == "git" and m["authority"] == 1.0 and m["depends_on"] == []
        assert m["created_at"] == m["valid_from"] and m["offset_end"] - m["offset_start"] == len(r["text"])
    # Offsets are the span in the version where the chunk started (front matter included).
    version1 = _doc(P1, P2, P3)
    for r in (p1, v1, p3):
        assert version1[r["metadata"]["offset_start"]:r["metadata"]["offset_end"]] == r["text"]
    assert _doc(P1, P2_EDIT, P3)[v2["metadata"]["offset_start"]:v2["metadata"]["offset_end"]] == P2_EDIT
    # Opaque ids, rows sorted by id.
    assert list(corpus) == sorted(corpus) and all(len(cid) == 13 for cid in corpus)


def test_manifest(built, repo):
    _, ds = built
    m = ds["manifest"]
    assert m["schema_version"] == "2.1" and m["generator"] == "git_history"
    assert m["repo"]["head"] == repo.git("rev-parse", "HEAD").strip()
    assert m["repo"]["tip_time"] == "2024-07-01T00:00:00Z"
    assert m["config"]["name"] == "git_history" and m["config"]["glob"] == ["docs/**/*.md"]
    assert m["config"]["repo"] == str(repo.path) and m["config"]["seed"] == 3
    c = m["counts"]
    assert (c["commits"], c["documents"], c["vectors"], c["lineages"], c["lineages_with_versions"]) == (6, 2, 8, 6, 1)
    assert set(m["files"]) == set(DATA_FILES) | {"labels/chunks.jsonl", "labels/queries.jsonl"}
    assert not (built[0] / "labels" / "families.jsonl").exists()


def test_queries_relevant_in_force_and_labels(built):
    _, ds = built
    corpus, qs = ds["corpus"], ds["queries"]
    # One lineage has two or more versions (P2): current (changed 122 days before the tip, recent_days=150 ->
    # recently_updated) and historical.
    cats = sorted(q["metadata"]["category"] for q in qs)
    assert cats == ["historical", "recently_updated"]
    texts = {q["text"] for q in qs}
    assert len(texts) == 1  # the same text whatever version is meant
    (text,) = texts
    assert text.startswith("Working here: ")
    words = text.split(": ", 1)[1].split()
    for w in words:  # every query word is in every version
        assert w in P2.lower() and w in P2_EDIT.lower()
    assert "ten" not in words and "fourteen" not in words
    for q in qs:
        meta = q["metadata"]
        assert meta["query_time"] == "2024-07-01T00:00:00Z"
        (cid, grade), = ds["qrels"][q["_id"]]
        assert grade == 2
        m = corpus[cid]["metadata"]
        assert m["valid_from"] <= meta["as_of"] and (m["valid_to"] is None or meta["as_of"] < m["valid_to"])
        lab = ds["lab_queries"][q["_id"]]
        assert lab["family"] == ds["lab_chunks"][cid]["family"] and lab["rumor"] == []
        for s in lab["stale"]:
            sm = corpus[s]["metadata"]
            assert ds["lab_chunks"][s]["family"] == lab["family"] and sm["valid_to"] <= meta["as_of"]
        if meta["category"] == "historical":
            assert meta["as_of"] < "2024-03-01T00:00:00Z"
        else:
            assert meta["as_of"] == meta["query_time"] and m["valid_to"] is None and len(lab["stale"]) == 2
    assert {q["metadata"]["split"] for q in qs} == {"test"}  # one document: all its queries in one split


def test_current_category_and_split_by_document(repo, tmp_path):
    out = tmp_path / "ds"
    write_from_config(_cfg(repo, recent_days=30), out)
    ds = _read(out)
    assert sorted(q["metadata"]["category"] for q in ds["queries"]) == ["current", "historical"]


def test_deterministic(built, repo, tmp_path):
    out = tmp_path / "again"
    write_from_config(_cfg(repo), out)
    first = sorted(p.relative_to(built[0]) for p in built[0].rglob("*") if p.is_file())
    assert first == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for rel in first:
        assert (built[0] / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_a_git_bundle_gives_the_same_dataset(built, repo, tmp_path):
    bundle = tmp_path / "repo.bundle"
    repo.git("bundle", "create", str(bundle), "--all")
    out = tmp_path / "from_bundle"
    write_from_config(_cfg(repo, repo=str(bundle), rev="main"), out)
    for name in DATA_FILES + ("labels/chunks.jsonl", "labels/queries.jsonl"):
        assert (out / name).read_bytes() == (built[0] / name).read_bytes(), name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["repo"] == str(bundle) and manifest["repo"]["head"] == built[1]["manifest"]["repo"]["head"]
    (tmp_path / "bad.bundle").write_text("not a bundle")
    with pytest.raises(BenchError, match=r"dataset\.repo=.*bad\.bundle: git clone of the bundle failed"):
        write_from_config(_cfg(repo, repo=str(tmp_path / "bad.bundle")), tmp_path / "x")


def test_the_loader_reads_it(built, tmp_path):
    folder, ds = built
    bare = tmp_path / "bare"  # the BEIR files alone (labels and manifest: see the next test)
    for name in DATA_FILES:
        (bare / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / name, bare / name)
    loaded = load_dataset(bare)
    assert len(loaded.corpus) == 8 and len(loaded.queries) == len(ds["queries"])
    full = load_dataset(folder)  # schema 2.1's reduced labels: families, stale sets, no families.jsonl
    assert full.labels is not None and len(full.corpus) == 8
    assert set(full.queries.family) <= set(full.labels.chunk_family) and full.queries.stale.counts().sum() > 0


def test_glob_list_and_rename_out_of_the_glob(tmp_path):
    r = Repo(tmp_path / "r")
    r.write("a/x.md", _doc(P1, P2))
    r.write("b/y.md", _doc(P3))
    r.commit("2024-01-01")
    r.write("c/x.md", (r.path / "a/x.md").read_text())  # leaves the globs: the document ends
    (r.path / "a/x.md").unlink()
    r.commit("2024-02-01")
    out = tmp_path / "ds"
    with pytest.raises(BenchError, match="no lineage with two versions"):
        write_git_history(git_params_from_config({"repo": str(r.path), "glob": ["a/*.md", "b/**/*.md"],
                                                  "min_chars": 20}), out)
    from data_gen.git_history import walk_history

    h = walk_history(git_params_from_config({"repo": str(r.path), "glob": ["a/*.md", "b/**/*.md"],
                                             "min_chars": 20}))
    assert {c.text: c.valid_to for c in h.chunks} == {P1: 1706745600, P2: 1706745600, P3: None}
    assert not out.exists()


def test_bad_input(repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(BenchError, match=r"^dataset\.repo=.*: not a git repository$"):
        write_from_config(_cfg(repo, repo=str(plain)), tmp_path / "o1")
    with pytest.raises(BenchError, match=r"^dataset\.glob=.*matches no file"):
        write_from_config(_cfg(repo, glob="nothing/**/*.rst"), tmp_path / "o2")
    with pytest.raises(BenchError, match=r"^dataset\.repo: required"):
        write_from_config(_cfg(repo, repo=None), tmp_path / "o3")
    with pytest.raises(BenchError, match=r"^dataset\.rev=nope: not a commit"):
        write_from_config(_cfg(repo, rev="nope"), tmp_path / "o4")
    with pytest.raises(BenchError, match=r"^dataset\.min_chars=0: must be an integer >= 1"):
        params_from_config(_cfg(repo, min_chars=0))
    with pytest.raises(BenchError, match=r"^dataset\.chunk_chars: unknown key for git_history"):
        params_from_config(_cfg(repo, chunk_chars=3))
    with pytest.raises(BenchError, match=r"^dataset\.queries\.dependent: unknown key"):
        params_from_config(_cfg(repo, queries={"dependent": 1}))
    with pytest.raises(BenchError, match=r"^dataset\.glob='/abs/\*\.md': patterns are relative"):
        params_from_config(_cfg(repo, glob="/abs/*.md"))
    with pytest.raises(BenchError, match=r"^dataset\.test_fraction=1"):
        params_from_config(_cfg(repo, test_fraction=1))
    with pytest.raises(BenchError, match="already exists"):
        write_from_config(_cfg(repo), tmp_path)
    assert not any(p.name.startswith("o") for p in tmp_path.iterdir())


def test_paragraph_units():
    p = GitHistoryParams(min_chars=10, max_chars=60)
    text = ("---\ntitle: x\n---\n# Top\n\nShort.\n\n## Sub\nA first sentence here. A second sentence is here. "
            "A third one.\n\n```\ncode line one\n\ncode line two\n```\n")
    assert strip_front_matter(text) == len("---\ntitle: x\n---\n")
    units = split_units(text, p)
    assert [u.text for u in units] == ["## Sub\nA first sentence here. A second sentence is here.", "A third one.",
                                       "```\ncode line one\n\ncode line two\n```"]
    assert [u.heading for u in units] == ["Sub", "Sub", "Sub"]
    assert all(text[u.start:u.end] == u.text for u in units)
    assert strip_front_matter("---\nnot closed\n") == 0 and strip_front_matter("text\n---\n") == 0


def test_align_keeps_moves_and_pairs_edits():
    old = ["alpha beta gamma delta", "one two three four five", "moved paragraph text here", "gone away now"]
    new = ["moved paragraph text here", "alpha beta gamma delta", "one two three four six", "brand new words"]
    kept, edited = align(old, new, 0.5)
    assert kept == {0: 2, 1: 0}
    assert edited == {2: 1}  # "gone away now" is removed, "brand new words" starts a new lineage


def test_write_from_config_dispatches_to_the_synthetic_generators(tmp_path):
    m = write_from_config(compose_config(TINY)["dataset"], tmp_path / "tiny")
    assert m["counts"]["vectors"] > 0 and (tmp_path / "tiny" / "labels" / "families.jsonl").exists()


def test_cli(repo, tmp_path):
    out = tmp_path / "cli"
    r = run_cli("smartvector-gen", "dataset=git_history", f"dataset.repo={repo.path}", "dataset.glob=docs/**/*.md",
                "dataset.min_chars=20", "dataset.min_query_words=3", f"out_dir={out}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: 8 vectors") and "6 commits" in r.stdout
    bad = run_cli("smartvector-gen", "dataset=git_history", f"dataset.repo={tmp_path}", f"out_dir={tmp_path / 'x'}")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "not a git repository" in bad.stderr


MARKUP_V1 = "3. Travel requests go to [the travel desk](https://old.example.gov/desk) at least ten days ahead."
MARKUP_V2 = "1. Travel requests go to **the travel desk** (https://new.example.gov) at least ten days ahead."
MARKUP_V3 = "1. Travel requests go to the travel desk at least fourteen days ahead."


@pytest.mark.parametrize("normalize", [True, False])
def test_markup_only_changes_keep_the_chunk(tmp_path, normalize):
    """A link target, a URL, list numbering and emphasis changing is no new version (normalize_markup, the
    default); a changed word is. With normalize_markup=false every edit is a version."""
    from data_gen.git_history import walk_history
    from data_gen.git_history.paragraphs import markup_key

    assert markup_key(MARKUP_V1) == markup_key(MARKUP_V2) != markup_key(MARKUP_V3)
    r = Repo(tmp_path / "repo")
    for date, para in (("2024-01-01", MARKUP_V1), ("2024-02-01", MARKUP_V2), ("2024-03-01", MARKUP_V3)):
        r.write("docs/a.md", _doc(P1, para))
        r.commit(date)
    h = walk_history(git_params_from_config({"repo": str(r.path), "glob": "docs/*.md",
                                             "normalize_markup": normalize}))
    versions = [h.chunks[i] for i in h.lineages[next(lid for lid, ix in h.lineages.items()
                                                     if "Travel" in h.chunks[ix[0]].text)]]
    assert [c.text for c in versions] == ([MARKUP_V1, MARKUP_V3] if normalize else [MARKUP_V1, MARKUP_V2, MARKUP_V3])
    assert versions[0].valid_to == versions[1].valid_from  # the window closes at the real change only
    assert len([c for c in h.chunks if c.text == P1]) == 1


def test_fewer_queries_than_asked_is_a_warning_and_a_metrics_field(built, capsys, tmp_path):
    """The tiny repository cannot give 5 queries of each category: the loader says so on stderr, and experiment=main
    records it in metrics.json (dataset.query_shortfall)."""
    from smartvector_bench.core.dataset.manifest import query_shortfall

    folder, ds = built
    short = query_shortfall(ds["manifest"])
    assert short and all(v["written"] < v["asked"] for v in short.values())
    assert short["current"]["asked"] == 5 and short["current"]["written"] == sum(
        q["metadata"]["category"] == "current" for q in ds["queries"])
    load_dataset(folder)
    err = capsys.readouterr().err
    assert f"{folder}: warning: fewer queries than asked (" in err and " of 5 asked" in err
    from experiments.main import _dataset_extras

    assert _dataset_extras(load_dataset(folder))["query_shortfall"] == short
    met = dict(ds["manifest"], counts=dict(ds["manifest"]["counts"],
                                           queries_by_category={"current": 5, "historical": 6, "recently_updated": 5}))
    assert query_shortfall(met) == {} and query_shortfall(None) == {}
