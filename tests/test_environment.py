"""Where a record's code version comes from."""

from tcbench import environment


def test_shipped_commit_wins_over_a_stale_git(monkeypatch):
    """A copy of the tree may carry an old .git; TCBENCH_GIT_COMMIT names what was shipped."""
    monkeypatch.setenv("TCBENCH_GIT_COMMIT", "a" * 40)
    monkeypatch.setenv("TCBENCH_GIT_DIRTY", "0")
    assert environment.git_info() == {"git_commit": "a" * 40, "git_dirty": False}
    monkeypatch.delenv("TCBENCH_GIT_COMMIT")
    info = environment.git_info()  # this checkout's own .git
    assert info["git_commit"] != "a" * 40 and len(info["git_commit"] or "") >= 40
