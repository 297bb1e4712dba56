import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"

# Tests run against the working tree even when the package is not installed in editable mode.
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# A `jaxfuse-lint daemon` the developer has running must not serve the tests' own runs (the
# daemon's tests start their own, in a folder of their own).
os.environ["JAXFUSE_LINT_DAEMON"] = "0"
