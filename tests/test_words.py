"""The product speaks of what it does, never of how it was made: no tracker numbers, work
sessions, remote-call jargon ("device call", "$OUT", "carry: [...]"), lent machines, debts
("owed") or diaries ("lessons from") in the tracked files a user reads. results/ stays out:
its records and reports are data, kept as they were made. A technical use of a flagged word
is allowed narrowly, each with its reason."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, tracked_files

# git grep -n -i -E "session|device call|\$OUT|\blent\b|issue ?#?[0-9]+|owed|lessons from",
# and the names of the remote-call tool's own knobs and roles
PROCESS_TALK = re.compile(r"session|device call|\$OUT|\blent\b|issue ?#?[0-9]+|owed|lessons from"
                          r"|carry: ?\[|budget_left|give_back|lead engineer|helper engineer", re.I)
# (pattern around a hit, why it is not process talk); a hit is allowed only where one of these
# matches a span of its line that holds the whole hit
ALLOWED = (
    (r"start_new_session", "subprocess's flag: the child in a POSIX session of its own"),
    (r"POSIX session", "the process-group sense: a detached server's own session"),
    (r"process session", "the same sense, said so: a detached server's own session"),
    (r"""scope=["']session["']""", "pytest's fixture scope: once per test run"),
    (r"mnt/session", "Apptainer's own folder, where it mounts a running container"),
    (r"[a-z]owed", "'owed' inside another word: allowed, slowed, followed, showed"),
)
SELF = "tests/test_words.py"  # spells the words out to find them
NOT_READ = ("results/",)


def process_talk(root: Path = REPO, files: list[str] | None = None) -> list[str]:
    """``path:line: text`` of every line that talks about how the product was made."""
    found = []
    for rel in files if files is not None else tracked_files(root):
        if rel == SELF or rel.startswith(NOT_READ):
            continue
        try:
            text = (root / rel).read_text()
        except (UnicodeDecodeError, OSError):
            continue  # binary: images, compressed data
        for number, line in enumerate(text.splitlines(), 1):
            spans = [a.span() for pattern, _ in ALLOWED for a in re.finditer(pattern, line, re.I)]
            if any(not any(s <= m.start() and m.end() <= e for s, e in spans)
                   for m in PROCESS_TALK.finditer(line)):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_tracked_file_talks_about_how_the_product_was_made():
    found = process_talk()
    assert not found, "process talk; say what the product does instead:\n" + "\n".join(found)


def test_process_talk_is_found_and_technical_uses_are_not(tmp_path):
    planted = ["## Lessons from the first run", "Everything below is owed.",
               "tar czf $OUT/results.tgz results", "tar czf \"$out/x.tgz\" logs",
               "proves the fork server (issue #21)", "the seed's MNIST (Issue 4, part 2)",
               "on the lent H200", "one device call of 9 minutes", "the session's time ran out",
               "run it with carry: [\".whl\"]", "check budget_left_s first",
               "Popen(cmd, start_new_session=True)  # as the last session did"]
    technical = ["proc = subprocess.Popen(cmd, start_new_session=True)",
                 '@pytest.fixture(scope="session")', "the server (a POSIX session of its own)",
                 "allow_dirty: the config allowed it; the profiler slowed each step",
                 "the thread that issues its kernels", "lentils, silently, talent 3",
                 "carry the work", "OUTPUT=out"]
    (tmp_path / "notes.md").write_text("\n".join(planted) + "\n")
    (tmp_path / "code.py").write_text("\n".join(technical) + "\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "README.md").write_text("made on the lent H200, issue 24\n")
    (tmp_path / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe session")
    found = process_talk(tmp_path, ["notes.md", "code.py", "results/README.md", "figure.png"])
    assert found == [f"notes.md:{i}: {line}" for i, line in enumerate(planted, 1)]
