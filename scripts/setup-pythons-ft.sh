#!/usr/bin/env bash
# Builds the free-threaded (--disable-gil) CPython interpreters the Python
# integration tests (tests/test_python.py) profile.  Debian ships no
# free-threaded binary package, so each is built from Debian's own source
# package (Debian's patches applied by dpkg-source), cheaply: no PGO, no
# LTO, no debug info, and only the interpreter plus the few shared stdlib
# modules the test targets import:
#
#   name          suite   source package
#   3.13t-trixie  trixie  python3.13
#   3.14t-forky   forky   python3.14
#
# Cache: $SPLUNK_PROFD_PYTHONS (default /var/cache/splunk-profd/pythons),
# shared with scripts/setup-pythons.sh:
#   <cache>/<name>/src        the unpacked source package
#   <cache>/<name>/build      the out-of-tree build; build/python runs in place
#   <cache>/<name>/python     symlink to build/python (what the tests run)
#   <cache>/<name>/stamp      written last; holds `sys.version` of the build
#   <cache>/<name>/build.log  configure and make output
#   <cache>/apt-src/<suite>/  the private APT state used to fetch sources
# Idempotent: a release whose stamp exists and whose python still runs
# free-threaded is reused as is.  Remove <cache>/<name> to rebuild.
#
# Sources come through apt-get source with a private sources list (one
# deb-src line per suite, the host's APT configuration untouched), so the
# .dsc, orig and debian tarballs are checked against the suite's signed
# Release file.  A source package the mirror does not serve (HTTP 404) is
# reported and skipped, exit status 0, so that the tests skip that
# interpreter; any other failure is an error.
#
# Mirror: the Debian mirror of this machine's APT sources (override with
# SPLUNK_PROFD_DEBIAN_MIRROR).  Needs root.  Installs the build
# dependencies (build-essential, libffi-dev, ...) if missing.
# SPLUNK_PROFD_FT_ONLY=NAME builds only that release.
set -euo pipefail
trap 'echo "setup-pythons-ft: error: command failed (exit $?) at line $LINENO" >&2' ERR
# The whole script is one function, read by bash before it runs, so that
# editing this file while it runs cannot derail it.
# shellcheck source=scripts/debian-mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh"
main() {
  export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

  CACHE=${SPLUNK_PROFD_PYTHONS:-/var/cache/splunk-profd/pythons}
  RELEASES=("3.13t-trixie trixie python3.13 3.13" "3.14t-forky forky python3.14 3.14")
  BUILD_DEPS=(build-essential dpkg-dev pkg-config libffi-dev zlib1g-dev)
  # Shared modules the test targets need beyond what `make python` links
  # in: asyncio needs select and _socket (and uses _asyncio, _heapq when
  # present), ctypes needs _ctypes, the rest are small accelerators the
  # stdlib imports on the way (math, _struct, _json, _opcode, ...).
  MODULES=(_asyncio _contextvars _ctypes _heapq _json _opcode _posixsubprocess _random _struct array fcntl math select _socket)
  TRIES=3

  log() { echo "setup-pythons-ft: $*"; }
  die() { echo "setup-pythons-ft: error: $*" >&2; exit 1; }

  [[ $(id -u) == 0 ]] || die "must run as root (apt-get and the shared cache need it)"

  missing=()
  for dep in "${BUILD_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$dep" 2>/dev/null | grep -q 'install ok installed' || missing+=("$dep")
  done
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # scripts/test.sh runs this beside scripts/setup-pythons.sh, which may
    # install too: wait for dpkg's lock rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi

  MIRROR=${SPLUNK_PROFD_DEBIAN_MIRROR:-$(find_mirror)}
  [[ -n $MIRROR ]] || die "no Debian mirror in /etc/apt/sources.list{,.d/*}; set SPLUNK_PROFD_DEBIAN_MIRROR"

  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock-ft"
  flock 9 # one build at a time (tests and a manual run may race)

  # sys.version on one line, and whether the GIL is really gone.
  ft_version() {
    "$1" -c 'import sys, sysconfig
assert sysconfig.get_config_var("Py_GIL_DISABLED") and not sys._is_gil_enabled(), "GIL enabled"
import asyncio, ctypes, json, signal, threading
print(" ".join(sys.version.split()))'
  }

  # apt-get with a private state directory holding one deb-src line for SUITE.
  apt_src() {
    local suite=$1 dir=$CACHE/apt-src/$1
    shift
    apt-get -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" -o Dir::State::Status=/dev/null \
      -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root "$@"
  }

  # fetch SUITE PACKAGE DIR: the source package's files in DIR.  Returns 2
  # when the mirror does not have them.
  fetch() {
    local suite=$1 package=$2 dir=$3 apt=$CACHE/apt-src/$1 try
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir"
    # Forky (testing) is past its Release Valid-Until on snapshot mirrors.
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $suite main" >"$apt/sources.list"
    [[ $suite == trixie || $suite == bookworm ]] &&
      echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${MIRROR}-security $suite-security main" \
        >>"$apt/sources.list"
    for ((try = 1; ; try++)); do
      if apt_src "$suite" update -qq >"$dir/../fetch.log" 2>&1 &&
        (cd "$dir" && apt_src "$suite" source --download-only -qq "$package") >>"$dir/../fetch.log" 2>&1; then
        return 0
      fi
      grep -q '404 *Not Found' "$dir/../fetch.log" && return 2
      tail -3 "$dir/../fetch.log" | sed "s/^/setup-pythons-ft: /" >&2
      ((try < TRIES)) || return 1
      sleep $((try * 5))
    done
  }

  # ensure NAME SUITE PACKAGE MINOR: a working free-threaded MINOR at <cache>/NAME/python.
  ensure() {
    local name=$1 suite=$2 package=$3 minor=$4 dir=$CACHE/$1 version started rc=0 dsc modules=() m
    if [[ -f $dir/stamp ]]; then
      if version=$(ft_version "$dir/python" 2>&1) && [[ $version == "$minor".* ]]; then
        log "$name: cached at $dir/python: Python $version"
        echo "$version" >"$dir/stamp"
        return
      fi
      log "$name: cached build broken (${version:-no output}): rebuilding"
    fi
    started=$SECONDS
    rm -rf --one-file-system "$dir"
    mkdir -p "$dir"
    log "$name: apt-get source $package ($suite) from $MIRROR"
    fetch "$suite" "$package" "$dir/dl" || rc=$?
    if ((rc == 2)); then
      log "warning: $name: the mirror does not serve $suite's $package source (404): skipped," \
        "the tests skip $name ($(grep -m1 -o 'http[^ ]*404\|http[^ ]*' "$dir/fetch.log" | head -1))"
      return 0
    fi
    ((rc == 0)) || die "$name: cannot fetch $package from $suite (log: $dir/fetch.log)"
    dsc=$(ls "$dir"/dl/*.dsc)
    dpkg-source -x "$dsc" "$dir/src" >"$dir/build.log" 2>&1 || die "$name: dpkg-source -x failed (log: $dir/build.log)"
    rm -rf "$dir/dl" "$dir"/*.orig.tar.* # dpkg-source -x leaves a link to the orig tarball
    mkdir -p "$dir/build"
    log "$name: configure --disable-gil, make python and ${#MODULES[@]} modules (log: $dir/build.log)"
    (
      cd "$dir/build"
      nice -n 10 ../src/configure --disable-gil --without-ensurepip --without-static-libpython \
        OPT="-DNDEBUG -O2" >>"../build.log" 2>&1
      ext=$(sed -n 's/^EXT_SUFFIX=[[:space:]]*//p' Makefile)
      for m in "${MODULES[@]}"; do modules+=("Modules/$m$ext"); done
      nice -n 10 make -j2 python pybuilddir.txt "${modules[@]}" >>"../build.log" 2>&1
      # An in-tree python finds its shared modules in the directory
      # pybuilddir.txt names; `make sharedmods` would fill it, for every
      # module: link just ours there.
      lib=$(cat pybuilddir.txt)
      mkdir -p "$lib"
      for m in "${modules[@]}"; do ln -sf "../../$m" "$lib/"; done
    ) || die "$name: build failed (log: $dir/build.log)"
    # What the tests never need again: objects (the python binary and
    # the modules are linked), sources other than Lib/, Include/.
    find "$dir/build" -name '*.o' -delete
    rm -rf "$dir/src/Doc" "$dir/src/Lib/test" "$dir/src/PC" "$dir/src/PCbuild" "$dir/src/Mac" "$dir/src/Android" \
      "$dir/src/iOS"
    ln -sfn build/python "$dir/python"
    version=$(ft_version "$dir/python" 2>&1) || die "$name: the built python does not run free-threaded: $version"
    [[ $version == "$minor".* ]] || die "$name: $suite's $package built Python $version, not $minor"
    echo "$version" >"$dir/stamp"
    log "$name: ready in $((SECONDS - started)) s at $dir/python: Python $version ($(du -sh "$dir" | cut -f1))"
  }

  total=$SECONDS
  for release in "${RELEASES[@]}"; do
    [[ -n ${SPLUNK_PROFD_FT_ONLY:-} && ${release%% *} != "$SPLUNK_PROFD_FT_ONLY" ]] && continue
    # shellcheck disable=SC2086
    ensure $release
  done
  log "done in $((SECONDS - total)) s"
}

main "$@"
exit
