"""Files in an import cycle are analysed before every fact about them is known; one is analysed
again only when its cross-module facts (its `external_traced` map) did change."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.run.runner import check_files

# The calibrated rules report their raw pattern (as in the fixture folders): the findings here are
# probes of what re-analysis finds, whatever the calibration tables say of them.
SETTINGS = replace(Settings(), extra=(RAW,))

# a and b import each other; each has a finding with a fix, and neither traces the other.
A = """\
import jax
import numpy as np

from pkg import b


@jax.jit
def f(x):
    return x + np.ones(3)
"""

B = """\
import jax
import numpy as np

from pkg import a


@jax.jit
def g(x):
    return x * np.arange(3)
"""

# c traces a function of d, and d imports c: d's map changes once c's summary is known.
C = """\
import jax

from pkg import d

step = jax.jit(d.update)
"""

D = """\
import numpy as np

from pkg import c


def update(x):
    return x + np.ones(3)
"""


def project(tmp_path: Path, files: dict[str, str]) -> list[Path]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(text)
    return sorted(pkg.glob("*.py"))


def facts(run):
    return [(d.filename, d.location, d.code, d.message, d.fix) for d in run.diagnostics]


def test_a_cycle_whose_facts_do_not_change_is_analysed_once(tmp_path):
    files = project(tmp_path, {"a": A, "b": B})
    run = check_files(files, SETTINGS, jobs=1)
    assert run.stats["reanalysed"] == 0
    assert run.stats["analysed"] == 2
    found = {(Path(d.filename).name, d.code) for d in run.diagnostics}
    assert {("a.py", "JF201"), ("b.py", "JF201")} <= found
    assert all(d.fix is not None for d in run.diagnostics if d.code == "JF201")
    # The same whatever the order the files are given in, and with two workers.
    assert facts(check_files(list(reversed(files)), SETTINGS, jobs=2)) == facts(run)


def test_a_cycle_whose_facts_change_is_analysed_again(tmp_path):
    files = project(tmp_path, {"c": C, "d": D})
    run = check_files(files, SETTINGS, jobs=1)
    flagged = [d for d in run.diagnostics if Path(d.filename).name == "d.py"]
    assert flagged and flagged[0].code == "JF201"  # d.update is traced, from c
    assert facts(check_files(list(reversed(files)), SETTINGS, jobs=2)) == facts(run)


def test_verbose_counts_each_file_once_and_the_extra_passes_apart(tmp_path):
    """`-v` said `6 files: 7 analysed`: a pass is not a file."""
    import subprocess
    import sys

    # Each traces a function of the other: the first analysed is analysed again once the other is known.
    first = "import jax\nimport numpy as np\n\nfrom pkg import d\n\nstep = jax.jit(d.update)\n\n\n" \
            "def grow(x):\n    return x * np.arange(3)\n"
    second = "import jax\nimport numpy as np\n\nfrom pkg import c\n\nrun = jax.jit(c.grow)\n\n\n" \
             "def update(x):\n    return x + np.ones(3)\n"
    project(tmp_path, {"c": first, "d": second})
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "-v", "--no-cache", "-j", "1", "pkg"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    [line] = [ln for ln in proc.stderr.splitlines() if " files: " in ln]
    assert line == ("jaxfuse-lint: 3 files: 2 analysed, 0 from the cache, 1 without JAX (syntax checked only); "
                    "1 more pass after a module they import changed"), proc.stderr
