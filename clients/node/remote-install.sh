# dsh-search remote install: find a build of dsh-search (with its ripgrep sidecar) in this user's cache on
# the machine where it is to run, or put it there from what the host sends through the channel (ssh, docker
# exec, kubectl exec, ...), checked by sha256. POSIX sh and the usual utilities; nothing is downloaded.
# The client libraries run it (clients/go, clients/node and clients/python hold the same file; see
# docs/hosts.md, "Remote workspaces"):
#
#   sh -c "$SCRIPT" dsh-search-install EXE_SHA256 RG_SHA256 EXE_BYTES RG_BYTES
#
# It answers on stdout with lines that start "dsh-search-install: " (other lines, such as a login shell's
# chatter, are not its own):
#   ready PATH   the build is in the cache, PATH being its dsh-search; nothing is read from stdin
#   send         it is not: write the EXE_BYTES bytes of dsh-search, then the RG_BYTES bytes of
#                dsh-search-rg, to stdin and close it; "ready PATH" or "error TEXT" follows
#   error TEXT   nothing was installed (exit status 1)
#
# The cache is ${XDG_CACHE_HOME:-$HOME/.cache}/dsh-search/builds/<sha256 of dsh-search>/: directories
# 0700, each checked to be this user's own real directory (a symlink, or a directory another user made or
# may write to, is refused, never used). A build is taken from it only when both files are there, this
# user's, and have the expected sha256. A transfer lands in a temporary directory of its own beside it; it
# is moved in (rename, file by file: a reader sees a whole file or none) only once both files have arrived
# whole, have the expected sha256 and `dsh-search --version` runs here. Two hosts installing at once each
# move in the same bytes; a cut transfer is removed, and what a killed one left is swept after a day.
set -u
umask 077

say() { printf 'dsh-search-install: %s\n' "$*"; }
fail() {
  say "error $*"
  exit 1
}

[ $# -eq 4 ] || fail "usage: sh -c SCRIPT dsh-search-install EXE_SHA256 RG_SHA256 EXE_BYTES RG_BYTES"
exe_sha=$1 rg_sha=$2 exe_bytes=$3 rg_bytes=$4
case $exe_sha$rg_sha in *[!0-9a-f]*) fail "a sha256 must be 64 lowercase hex digits" ;; esac
[ ${#exe_sha} -eq 64 ] && [ ${#rg_sha} -eq 64 ] || fail "a sha256 must be 64 lowercase hex digits"
case $exe_bytes in '' | *[!0-9]*) fail "EXE_BYTES must be a number of bytes" ;; esac
case $rg_bytes in '' | *[!0-9]*) fail "RG_BYTES must be a number of bytes" ;; esac

uid=$(id -u) || fail "id -u failed"
if command -v sha256sum >/dev/null 2>&1; then
  digest() { set -- "$(sha256sum <"$1")" && printf '%s\n' "${1%% *}"; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { set -- "$(shasum -a 256 <"$1")" && printf '%s\n' "${1%% *}"; }
elif command -v openssl >/dev/null 2>&1; then
  digest() { set -- "$(openssl dgst -sha256 <"$1")" && printf '%s\n' "${1##* }"; }
else
  fail "no sha256 tool here (sha256sum, shasum or openssl)"
fi

if [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache=$XDG_CACHE_HOME
elif [ -n "${HOME:-}" ]; then
  cache=$HOME/.cache
else
  fail "neither XDG_CACHE_HOME nor HOME is set: there is no per-user cache"
fi
case $cache in /*) ;; *) fail "the cache directory $cache is not an absolute path" ;; esac

# mine PATH: a real directory (not a symlink) of this user's that neither its group nor others may write.
mine() { [ -d "$1" ] && [ ! -L "$1" ] && [ -n "$(find "$1" -prune -user "$uid" ! -perm -020 ! -perm -002 2>/dev/null)" ]; }
# own PATH: make it (0700), or take it when it is mine; anything else is refused.
own() {
  mkdir -m 700 "$1" 2>/dev/null
  mine "$1" || fail "$1 is not a directory of this user's that only this user can write to: refusing to use it"
  chmod 700 "$1" || fail "cannot make $1 private (chmod 700)"
}
# whole FILE: a regular executable file of this user's that no one else may write.
whole() { [ -f "$1" ] && [ ! -L "$1" ] && [ -x "$1" ] && [ -n "$(find "$1" -prune -user "$uid" ! -perm -020 ! -perm -002 2>/dev/null)" ]; }
# intact DIR: it holds this build.
intact() {
  whole "$1/dsh-search" && whole "$1/dsh-search-rg" &&
    [ "$(digest "$1/dsh-search")" = "$exe_sha" ] && [ "$(digest "$1/dsh-search-rg")" = "$rg_sha" ]
}

mkdir -p "$cache" 2>/dev/null
# The directory the cache is in may be a symlink (followed here), but not one others may write to: they
# could swap what is below it.
real=$(cd -P "$cache" 2>/dev/null && pwd -P) && [ -n "$(find "$real" -prune \( -user "$uid" -o -user 0 \) ! -perm -020 ! -perm -002 2>/dev/null)" ] ||
  fail "$cache is not a directory of this user's (or root's) that only its owner can write to: refusing to use it"
cache=$real
own "$cache/dsh-search"
builds=$cache/dsh-search/builds
own "$builds"
dir=$builds/$exe_sha

if mine "$dir" && intact "$dir"; then
  touch "$dir" 2>/dev/null # when it was last used
  say "ready $dir/dsh-search"
  exit 0
fi

# What killed transfers left (a day old: none can still be running).
find "$builds/." ! -name . -prune -name '.tmp-*' -mtime +0 -exec rm -rf {} + 2>/dev/null
tmp=$(mktemp -d "$builds/.tmp-XXXXXXXX" 2>/dev/null) || {
  tmp=$builds/.tmp-$$-$(date +%s)
  mkdir -m 700 "$tmp" || fail "cannot make a temporary directory in $builds"
}
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM PIPE

say send
cat >"$tmp/payload" || fail "reading the build from stdin failed"
got=$(($(wc -c <"$tmp/payload")))
want=$((exe_bytes + rg_bytes))
[ "$got" -eq "$want" ] || fail "the transfer was cut short: $got of $want bytes arrived"
head -c "$exe_bytes" "$tmp/payload" >"$tmp/dsh-search" &&
  tail -c "+$((exe_bytes + 1))" "$tmp/payload" >"$tmp/dsh-search-rg" ||
  fail "cannot write to $tmp (is the disk full?)"
rm -f "$tmp/payload"
chmod 700 "$tmp/dsh-search" "$tmp/dsh-search-rg" || fail "cannot make the build executable"
[ "$(digest "$tmp/dsh-search")" = "$exe_sha" ] || fail "dsh-search arrived damaged (its sha256 differs)"
[ "$(digest "$tmp/dsh-search-rg")" = "$rg_sha" ] || fail "dsh-search-rg arrived damaged (its sha256 differs)"
if ! ran=$("$tmp/dsh-search" --version 2>&1); then
  fail "this build does not run on this $(uname -s) $(uname -m) machine: $(printf '%s\n' "$ran" | head -n 1)"
fi

own "$dir"
for name in dsh-search-rg dsh-search; do # the sidecar first: a dsh-search in place finds its sidecar
  if [ -L "$dir/$name" ]; then
    rm -f "$dir/$name"
  elif [ -d "$dir/$name" ]; then
    fail "$dir/$name is a directory"
  fi
  mv -f "$tmp/$name" "$dir/$name" || fail "cannot move $name into $dir"
done
intact "$dir" || fail "$dir changed while the build was moved in"
say "ready $dir/dsh-search"
