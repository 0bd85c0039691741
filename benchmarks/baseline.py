"""Earlier versions of our own modules, loaded from git, as in-run baselines.

A speed-up is only meaningful against the code it replaced, timed on the same
machine in the same run. ``load("src/evoflow/policy/hf.py")`` imports that file
as it was at ``BASELINE`` (the last commit before the CPU-speed work on
decoding and SFT) under a private module name, so a benchmark can run the old
and the new implementation side by side. The old modules import today's
versions of the modules they depend on; only the loaded file is old.
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

BASELINE = "38a2c58"  # the decoding and SFT loops before the CPU-speed work
ROOT = Path(__file__).resolve().parent.parent


def load(path: str, commit: str = BASELINE) -> types.ModuleType:
    """Module ``path`` (relative to the repository root) as of ``commit``."""
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise SystemExit(
            f"cannot read {path} at commit {commit} (a full git clone is needed "
            f"for baseline comparisons): {exc}"
        ) from exc
    name = f"baseline_{commit}_{Path(path).stem}"
    module = types.ModuleType(name)
    module.__file__ = f"{commit}:{path}"
    sys.modules[name] = module  # dataclasses look their module up by name
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module
