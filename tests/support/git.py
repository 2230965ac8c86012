"""A scratch git repository for the tests of miltext's git integration."""
import os
import subprocess


def scratch_repo(tmp_path):
    """A new repository, with a home of its own so that no real git config is read or written."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    path = tmp_path / "repo"
    path.mkdir()

    def git(*args, check=True):
        result = subprocess.run(["git", *args], cwd=path, env=env, capture_output=True, text=True, timeout=300)
        assert not check or result.returncode == 0, result.stderr
        return result.stdout

    git("init", "-q")
    git.path, git.env = path, env
    return git
