"""The `tilepick` console command of an installed package: runs the CLI binary the wheel carries
(tilepick/bin/tilepick) with the package's data and models, as the source tree's build/tilepick runs
with the tree's."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> int:
    pkg = Path(__file__).resolve().parent
    binary = pkg / "bin" / "tilepick"
    if not binary.is_file():
        print(f"tilepick: no CLI binary at {binary}: this is a source tree (use build/tilepick) or a package "
              "built without it", file=sys.stderr)
        return 1
    # The extension module points TILEPICK_DATA_DIR / TILEPICK_MODELS_DIR at the package's data and
    # models when it loads (python/src/core_module.cpp); the CLI inherits them.
    import tilepick._core  # noqa: F401
    # `tilepick report` runs the python3 on PATH: this interpreter's, which has the package.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.execv(str(binary), [str(binary), *sys.argv[1:]])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
