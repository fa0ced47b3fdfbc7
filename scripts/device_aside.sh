#!/usr/bin/env bash
# The device tool copies the working tree only up to 64 MiB, and the tracked tree is larger. Before a device
# call, `scripts/device_aside.sh out` moves what no GPU run reads (past results, the H100 records) out of the
# tree and stamps .commit (carry it, with .deps); after the call, `scripts/device_aside.sh back` restores them.
# `out` needs a clean tree, so that nothing is ever committed while those folders are away.
set -euo pipefail
cd "$(dirname "$0")/.."
ASIDE=${TILEPICK_ASIDE:-/tmp/tilepick-aside}
PATHS=(bench/results data/sweeps/h100-graph)

case "${1:-}" in
  out)
    if [ -n "$(git status --porcelain)" ]; then
      echo "device_aside: commit or stash first; the tree is not clean:" >&2; git status --short >&2; exit 1
    fi
    if [ -e "$ASIDE" ]; then echo "device_aside: $ASIDE exists; run 'back' first" >&2; exit 1; fi
    git rev-parse --short=12 HEAD > .commit
    # A commit made while the folders are away would delete them: a pre-commit hook refuses it until 'back'
    # (in a work tree that lacks bench/results; other worktrees of the repository commit as usual).
    hook="$(git rev-parse --git-path hooks)/pre-commit"
    if [ ! -e "$hook" ] || grep -q "installed by scripts/device_aside.sh" "$hook"; then
      mkdir -p "$(dirname "$hook")"
      printf '#!/bin/sh\n# installed by scripts/device_aside.sh\nif [ -d "%s" ] && [ ! -d bench/results ]; then echo "pre-commit: bench/results is aside in %s; run scripts/device_aside.sh back first" >&2; exit 1; fi\n' \
        "$ASIDE" "$ASIDE" > "$hook"
      chmod +x "$hook"
    fi
    for p in "${PATHS[@]}"; do mkdir -p "$ASIDE/$(dirname "$p")" && mv "$p" "$ASIDE/$p"; done
    echo "device_aside: moved ${PATHS[*]} to $ASIDE; tracked files left: $(git ls-files -z | du -ch --files0-from=- 2>/dev/null | tail -1 | cut -f1)"
    ;;
  back)
    if [ ! -d "$ASIDE" ]; then echo "device_aside: nothing aside in $ASIDE" >&2; exit 1; fi
    for p in "${PATHS[@]}"; do
      if [ -e "$p" ]; then echo "device_aside: $p exists here; resolve by hand ($ASIDE/$p)" >&2; exit 1; fi
      mv "$ASIDE/$p" "$p"
    done
    rm -rf "$ASIDE"
    echo "device_aside: restored ${PATHS[*]}"
    ;;
  *)
    echo "usage: scripts/device_aside.sh out|back   (before and after a device-tool call)" >&2; exit 2
    ;;
esac
