"""What this tilepick installation is and finds: version, device, models, caches, environment.

    python -m tilepick.info
"""
from __future__ import annotations

import os
import sys


def lines() -> list[str]:
    import tilepick
    from tilepick import _core

    out = [f"tilepick {tilepick.__version__} ({os.path.dirname(tilepick.__file__)})",
           f"device 0: {_core.device_summary(0)}",
           f"data: {os.environ.get('TILEPICK_DATA_DIR', '(the source tree)')}",
           f"models: {os.environ.get('TILEPICK_MODELS_DIR', '(the source tree)')}"]
    models = _core.models_summary()
    if not models:
        out.append("  no model folders: selection uses the analytic fallback")
    for name, usable, why in models:
        out.append(f"  {name}: {'usable' if usable else 'not usable: ' + why}")
    out.append(f"JIT cache: {_core.jit_cache_dir()}")
    out.append(f"plan cache: {os.environ.get('TILEPICK_PLAN_CACHE') or '(memory only)'}")
    env = sorted(k for k in os.environ if k.startswith("TILEPICK_"))
    out.append("environment: " + (", ".join(f"{k}={os.environ[k]}" for k in env) if env else "(no TILEPICK_* set)"))
    return out


def main(argv: list[str] | None = None) -> int:
    if argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print("\n".join(lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
