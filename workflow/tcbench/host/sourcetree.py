"""The code that ran: its commit and whether the tree was clean, read from git or, in a copy
without a usable .git (a GPU host's copy: scripts/remote/README.md), from a manifest written
in the checkout beforehand.

    python -m tcbench.host.sourcetree manifest     # writes .tcbench-tree.json for HEAD
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def run_quiet(cmd: list[str], timeout: float = 20) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return out.stdout.strip() or None


# What counts as the code: the tree minus the result sets a study writes into it (committed
# results/ are rewritten by every aggregation; that is data, not a change to what ran).
NOT_CODE = ("results/",)
# untracked files that can change what runs (a new module the package imports)
UNTRACKED_CODE = ("workflow/",)
MANIFEST = ".tcbench-tree.json"  # see tree_manifest()
MAX_DIRTY_FILES = 50


def _is_code(path: str) -> bool:
    return not path.startswith(NOT_CODE) and path != MANIFEST


def _git_status(repo: Path) -> tuple[str, list[str]] | None:
    """HEAD's commit and the code files that differ from it (modified, staged, deleted, or new
    under workflow/), from one ``git status`` call; None without git or a repository."""
    out = run_quiet(["git", "-C", str(repo), "status", "--porcelain=v2", "--branch", "-z",
                "--untracked-files=all", "--", ".", ":(exclude)results"])
    if out is None:
        return None
    commit, files, entries = None, [], iter(out.split("\0"))
    for entry in entries:
        if entry.startswith("# branch.oid "):
            commit = entry.split()[-1]
        elif entry.startswith(("1 ", "u ")):
            files.append(entry.split(" ", 8 if entry[0] == "1" else 10)[-1])
        elif entry.startswith("2 "):
            files.append(entry.split(" ", 9)[-1])
            next(entries, None)  # the rename's original path
        elif entry.startswith("? ") and entry[2:].startswith(UNTRACKED_CODE):
            files.append(entry[2:])
    if commit is None or not re.fullmatch(r"[0-9a-f]{40,64}", commit):
        return None  # no commit yet ("(initial)"), or output not understood
    return commit, sorted(f for f in files if _is_code(f))


def _blob_sha(path: Path) -> str | None:
    """git's object name of a file's content (``git hash-object``), without git."""
    try:
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    except OSError:
        return None
    header = f"blob {len(data)}\0".encode()
    return hashlib.sha1(header + data).hexdigest()


def tree_manifest(repo: Path = REPO) -> dict:
    """HEAD's commit and the object name of every code file in it: shipped with a copy of the
    tree that has no usable .git (``python -m tcbench.host.sourcetree manifest``), it lets a job
    there prove its files are the commit's (``git_info``)."""
    head = _git_status(repo)
    listing = run_quiet(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", "HEAD"])
    if head is None or listing is None:
        raise RuntimeError(f"{repo}: not a git checkout with a commit")
    files = {}
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob" and _is_code(path):
            files[path] = sha
    return {"commit": head[0], "dirty_when_written": head[1], "files": files}


def _compare_with_manifest(repo: Path, manifest: dict) -> list[str]:
    """Code files of this tree that differ from the manifest's commit (changed, missing, or new
    under workflow/)."""
    known = manifest["files"]
    differ = [p for p, sha in known.items() if _blob_sha(repo / p) != sha]
    for top in UNTRACKED_CODE:
        for path in (repo / top).rglob("*"):
            rel = path.relative_to(repo).as_posix()
            if path.is_file() and rel not in known and "__pycache__" not in path.parts:
                differ.append(rel)
    return sorted(differ)


def _read_manifest(repo: Path) -> dict | None:
    path = Path(os.environ.get("TCBENCH_TREE_MANIFEST") or repo / MANIFEST)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("files"), dict) and doc.get("commit")
    return doc if ok else None


def git_info(repo: Path = REPO) -> dict:
    """The commit of the code that runs, and whether the code differs from it.

    ``git_dirty`` is True or False only with evidence, None when it cannot be told:

    - a git checkout: ``git status`` says (one call; results/ is data, not code; new files
      under workflow/ count, other untracked files do not);
    - a copy without a usable .git (a container, a remote machine whose copy carries a stale
      .git) names what was shipped in ``TCBENCH_GIT_COMMIT``, which wins over such a .git. Its
      files are checked against a manifest of that commit (``.tcbench-tree.json`` at the root
      or ``$TCBENCH_TREE_MANIFEST``, written by ``python -m tcbench.host.sourcetree manifest``);
      without one, ``TCBENCH_GIT_DIRTY=1`` is taken at its word (dirty), anything else is
      unknown (None): the shipper's "clean" is a claim, not evidence.
    - no git at all: HEAD's commit is read from the .git files; cleanliness is unknown.
    """
    shipped = os.environ.get("TCBENCH_GIT_COMMIT") or None
    status = _git_status(repo)
    if status is not None and shipped in (None, status[0]):
        commit, files = status
        return _git_fields(commit, bool(files), files, "git")
    if shipped:
        manifest = _read_manifest(repo)
        if manifest is not None and manifest["commit"] == shipped:
            files = _compare_with_manifest(repo, manifest)
            return _git_fields(shipped, bool(files), files, "manifest")
        claimed = (os.environ.get("TCBENCH_GIT_DIRTY") or "").lower() in ("1", "true", "yes")
        return _git_fields(shipped, True if claimed else None, None, "TCBENCH_GIT_COMMIT")
    head = _head_commit(repo / ".git")
    return _git_fields(head, None, None, "git-files" if head else None)


def _git_fields(commit, dirty, files, source) -> dict:
    return {"git_commit": commit, "git_dirty": dirty,
            "git_dirty_files": None if files is None else files[:MAX_DIRTY_FILES],
            "git_source": source}


def _head_commit(git: Path) -> str | None:
    """HEAD's commit read from the repository files, following a worktree's ``gitdir:`` link,
    a symbolic ref and packed refs; None when any part is unreadable."""
    try:
        if git.is_file():
            git = (git.parent / git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
        ref = head[4:].strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        for line in (common / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref:
                return sha
    except (OSError, IndexError):
        pass
    return None


def check_clean(allow_dirty: bool, repo: Path = REPO) -> str | None:
    """Why a measuring run must not start on this tree, or None when it may: the code differs
    from its commit (naming the files), or whether it does cannot be told; ``allow_dirty``
    lets either through (the records then say so)."""
    if allow_dirty:
        return None
    info = git_info(repo)
    if info["git_dirty"] is False:
        return None
    if info["git_dirty"]:
        files = info["git_dirty_files"] or []
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10
                                         else "")
        what = f"the code differs from commit {str(info['git_commit'])[:12]}" + \
            (f": {shown}" if shown else " (TCBENCH_GIT_DIRTY)")
    else:
        what = ("whether the code is that of a commit cannot be told (no git checkout, and no "
                f"{MANIFEST} for TCBENCH_GIT_COMMIT; python -m tcbench.host.sourcetree manifest "
                "writes one)")
    return (f"{what}. A GPU study records the commit it ran; commit the changes, or set "
            "allow_dirty: true (--config allow_dirty=True) and the records will say so.")


def main(argv=None) -> int:
    """``python -m tcbench.host.sourcetree manifest [--out PATH]``: write the tree manifest that
    lets a copy of this checkout without .git prove it is HEAD (see git_info)."""
    import argparse

    from .. import atomic, cli

    ap = argparse.ArgumentParser(prog="python -m tcbench.host.sourcetree", description=main.__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("manifest", help=f"write {MANIFEST} for HEAD")
    m.add_argument("--out", type=Path, default=REPO / MANIFEST)
    args = ap.parse_args(argv)

    def manifest():
        doc = tree_manifest(REPO)
        atomic.write_json(args.out, doc)
        dirty = doc["dirty_when_written"]
        print(f"{args.out}: {len(doc['files'])} files of {doc['commit']}"
              + (f"; the tree differs from it in {len(dirty)} file(s): {', '.join(dirty[:5])}"
                 if dirty else ""))
        print(f"export TCBENCH_GIT_COMMIT={doc['commit']}")

    return cli.main("tcbench.host.sourcetree", manifest, (RuntimeError,))


if __name__ == "__main__":
    raise SystemExit(main())
