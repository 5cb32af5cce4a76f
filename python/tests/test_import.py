"""dfanon refuses, at import, a datafusion whose major version is not its own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import scratch

import dfanon


def test_another_datafusion_major_is_refused_at_import():
    venv = scratch() / "datafusion54-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "datafusion==54.1.0"],
            check=True,
        )
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--force-reinstall", "--no-deps", os.environ["DFANON_WHEEL"]],
        check=True,
    )
    done = subprocess.run([str(python), "-c", "import dfanon"], capture_output=True, text=True)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: dfanon 0.1.0 is built with DataFusion 55.2.0"), last
    assert "datafusion 54.1.0 is installed" in last, last


def test_this_datafusion_is_accepted():
    import datafusion

    assert datafusion.__version__.split(".")[0] == dfanon.DATAFUSION_VERSION.split(".")[0]


def test_register_refuses_an_unknown_access():
    import datafusion

    with pytest.raises(dfanon.DfanonError, match="access must be 'public' or 'owner', not 'admin'"):
        dfanon.register(datafusion.SessionContext(), access="admin")
