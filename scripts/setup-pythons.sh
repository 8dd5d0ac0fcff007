#!/usr/bin/env bash
# Prepares the real CPython interpreters the Python integration tests
# (tests/test_python.py) profile, each a minimal Debian root made with
# debootstrap in a cache directory outside the repository:
#
#   name          suite     interpreter
#   3.9-bullseye  bullseye  python3 (3.9)
#   3.13-trixie   trixie    python3 (3.13)
#   3.14-forky    forky     python3 (3.14; forky = testing)
#   3.15-forky    forky     python3.15 (3.15): a copy of 3.14-forky's root
#                           plus forky's python3.15 package (apt-get)
#
# Each of 3.9, 3.13, 3.14 and 3.15 also gets Debian's python3-fastapi and
# python3-uvicorn (tests/test_asyncio_fastapi.py; the host's 3.11 gets them
# from scripts/setup.sh; bullseye's are FastAPI 0.63 and uvicorn 0.13,
# ~40 s to install).  forky's python3-pydantic-core is built for 3.14
# only, so 3.15 gets pydantic and pydantic-core from PyPI wheels (cp315,
# pinned) in its /usr/local/lib/python3.15/dist-packages, ahead of Debian's.
# ~40 s per chroot when cold, a second when done.
#
# plus the machine's own /usr/bin/python3.11 (bookworm), used without chroot.
# 3.15 is forky's second interpreter, not its python3, so its root is the
# 3.14 one copied (seconds; a second debootstrap would take minutes) with
# python3.15 installed by apt.  The mirror's forky Release file may be past
# its Valid-Until date, hence -o Acquire::Check-Valid-Until=false.
#
# Cache: $SPLUNK_PROFD_PYTHONS (default /var/cache/splunk-profd/pythons).
#   <cache>/<name>/root      the chroot (run: chroot <root> <interpreter> ...)
#   <cache>/<name>/stamp     written last; holds `sys.version` of its interpreter
#   <cache>/versions.txt     name<TAB>sys.version of all five interpreters
#   <cache>/debs/            downloaded .debs (debootstrap's and apt's
#                            python3.15 ones), reused by later runs
# Idempotent: a release whose stamp exists and whose interpreter still runs
# is reused as is.  Remove <cache>/<name> (or the whole cache) to rebuild;
# 3.15-forky is rebuilt from 3.14-forky's root.
#
# Mirror: the Debian mirror of this machine's APT sources (override with
# SPLUNK_PROFD_DEBIAN_MIRROR).  Needs root.  Installs debootstrap if missing.
set -euo pipefail
trap 'echo "setup-pythons: error: command failed (exit $?) at line $LINENO" >&2' ERR
# The whole script is one function, read by bash before it runs, so that
# editing this file while it runs cannot derail it.
# shellcheck source=scripts/debian-mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh"
main() {
  export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

  CACHE=${SPLUNK_PROFD_PYTHONS:-/var/cache/splunk-profd/pythons}
  RELEASES=("3.9-bullseye bullseye 3.9" "3.13-trixie trixie 3.13" "3.14-forky forky 3.14")
  # name, the release whose root it copies, the package (= interpreter), minor.
  ADDED=("3.15-forky 3.14-forky python3.15 3.15")
  APT=(apt-get -o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 -qq)
  HOST_PYTHON=/usr/bin/python3.11
  TRIES=3

  log() { echo "setup-pythons: $*"; }
  die() { echo "setup-pythons: error: $*" >&2; exit 1; }

  [[ $(id -u) == 0 ]] || die "must run as root (debootstrap and chroot need it)"

  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  fi

  MIRROR=${SPLUNK_PROFD_DEBIAN_MIRROR:-$(find_mirror)}
  [[ -n $MIRROR ]] || die "no Debian mirror in /etc/apt/sources.list{,.d/*}; set SPLUNK_PROFD_DEBIAN_MIRROR"

  mkdir -p "$CACHE/debs"
  exec 9>"$CACHE/.lock"
  flock 9 # one provisioning at a time (tests and a manual run may race)

  # sys.version of the chroot's python3 (or $2) on one line (3.9's has a newline).
  chroot_version() { chroot "$1" "${2:-python3}" -c 'import sys; print(" ".join(sys.version.split()))'; }

  # Unmounts whatever a failed debootstrap left mounted under $1 (its
  # /proc, /sys), so that removing the directory never reaches the host's.
  unmount_under() {
    local m
    { findmnt -rno TARGET | grep -F "$1/" || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
  }

  # ensure NAME SUITE MINOR: a working chroot with python3 == MINOR at <cache>/NAME/root.
  ensure() {
    local name=$1 suite=$2 minor=$3 dir=$CACHE/$1 version script try started
    if [[ -f $dir/stamp ]]; then
      if version=$(chroot_version "$dir/root" 2>&1) && [[ $version == "$minor".* ]]; then
        log "$name: cached at $dir/root: Python $version"
        echo "$version" >"$dir/stamp"
        return
      fi
      log "$name: cached chroot broken (python3: ${version:-no output}): rebuilding"
    fi
    # debootstrap of bookworm knows no later codename: use its sid script then.
    script=/usr/share/debootstrap/scripts/$suite
    [[ -e $script ]] || script=/usr/share/debootstrap/scripts/sid
    started=$SECONDS
    for ((try = 1; ; try++)); do
      unmount_under "$dir"
      rm -rf --one-file-system "$dir"
      mkdir -p "$dir"
      log "$name: debootstrap $suite from $MIRROR (try $try/$TRIES)"
      if debootstrap --variant=minbase --include=python3 --cache-dir="$CACHE/debs" \
        "$suite" "$dir/root" "$MIRROR" "$script" >"$dir/debootstrap.log" 2>&1; then
        break
      fi
      tail -5 "$dir/debootstrap.log" | sed "s/^/setup-pythons: $name: /" >&2
      [[ -f $dir/root/debootstrap/debootstrap.log ]] &&
        tail -5 "$dir/root/debootstrap/debootstrap.log" | sed "s/^/setup-pythons: $name: /" >&2
      ((try < TRIES)) || die "$name: debootstrap $suite failed $TRIES times (log: $dir/debootstrap.log)"
      sleep $((try * 5))
    done
    unmount_under "$dir"
    version=$(chroot_version "$dir/root" 2>&1) || die "$name: python3 does not run in $dir/root: $version"
    [[ $version == "$minor".* ]] || die "$name: $suite's python3 is $version, not $minor"
    # Removes what the interpreters never need, to keep the cache small.
    rm -rf "$dir/root/var/cache/apt/archives/"*.deb "$dir/root/usr/share/doc" "$dir/root/usr/share/man" \
      "$dir/root/usr/share/locale"
    echo "$version" >"$dir/stamp"
    log "$name: ready in $((SECONDS - started)) s at $dir/root: Python $version ($(du -sh "$dir/root" | cut -f1))"
  }

  # ensure_added NAME BASE PACKAGE MINOR: a copy of <cache>/BASE/root at
  # <cache>/NAME/root with the Debian package PACKAGE, whose interpreter
  # (also named PACKAGE) is MINOR.
  ensure_added() {
    local name=$1 base=$CACHE/$2/root package=$3 minor=$4 dir=$CACHE/$1 version started
    if [[ -f $dir/stamp ]]; then
      if version=$(chroot_version "$dir/root" "$package" 2>&1) && [[ $version == "$minor".* ]]; then
        log "$name: cached at $dir/root: Python $version"
        echo "$version" >"$dir/stamp"
        return
      fi
      log "$name: cached chroot broken ($package: ${version:-no output}): rebuilding"
    fi
    started=$SECONDS
    unmount_under "$dir"
    rm -rf --one-file-system "$dir"
    mkdir -p "$dir"
    log "$name: copying $base and installing $package from $MIRROR"
    cp -a --reflink=auto "$base" "$dir/root"
    rm -rf "${dir:?}/root/tmp/"* # what tests left in the base's /tmp
    # .debs of an earlier build are offered to apt, which checks them.
    cp -p "$CACHE/debs/"*"$package"*.deb "$dir/root/var/cache/apt/archives/" 2>/dev/null || true
    if ! { chroot "$dir/root" "${APT[@]}" update &&
      chroot "$dir/root" env DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y --no-install-recommends \
        "$package"; } >"$dir/apt.log" 2>&1; then
      tail -5 "$dir/apt.log" | sed "s/^/setup-pythons: $name: /" >&2
      die "$name: installing $package failed (log: $dir/apt.log)"
    fi
    version=$(chroot_version "$dir/root" "$package" 2>&1) || die "$name: $package does not run in $dir/root: $version"
    [[ $version == "$minor".* ]] || die "$name: $package is $version, not $minor"
    cp -p "$dir/root/var/cache/apt/archives/"*.deb "$CACHE/debs/" 2>/dev/null || true
    # The package lists and apt's caches are only needed to install.
    rm -rf "$dir/root/var/cache/apt/"*.bin "$dir/root/var/cache/apt/archives/"*.deb "$dir/root/var/lib/apt/lists/"* \
      "$dir/root/usr/share/doc" "$dir/root/usr/share/man" "$dir/root/usr/share/locale"
    echo "$version" >"$dir/stamp"
    log "$name: ready in $((SECONDS - started)) s at $dir/root: Python $version ($(du -sh "$dir/root" | cut -f1))"
  }

  # ensure_web NAME INTERPRETER [WHEELS...]: fastapi and uvicorn import in
  # <cache>/NAME/root's INTERPRETER; WHEELS are pip requirements installed
  # from binary wheels for that interpreter's version (no compiling).
  ensure_web() {
    local name=$1 python=$2 root=$CACHE/$1/root started minor
    shift 2
    check() { chroot "$root" "$python" -c 'import fastapi, uvicorn' >/dev/null 2>&1; }
    if check; then
      log "$name: fastapi and uvicorn cached"
      return
    fi
    started=$SECONDS
    if ! { chroot "$root" "${APT[@]}" update &&
      chroot "$root" env DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y --no-install-recommends \
        python3-fastapi python3-uvicorn; } >"$CACHE/$name/apt-web.log" 2>&1; then
      tail -5 "$CACHE/$name/apt-web.log" | sed "s/^/setup-pythons: $name: /" >&2
      die "$name: installing python3-fastapi python3-uvicorn failed (log: $CACHE/$name/apt-web.log)"
    fi
    rm -rf "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
    if (($#)); then
      minor=$(chroot "$root" "$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
      python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
        --python-version "$minor" --implementation cp --abi "cp$minor" --platform manylinux_2_17_x86_64 \
        --target "$root/usr/local/lib/python${minor:0:1}.${minor:1}/dist-packages" "$@" ||
        die "$name: pip install $* failed"
    fi
    check || die "$name: fastapi or uvicorn does not import in $python: $(chroot "$root" "$python" -c 'import fastapi, uvicorn' 2>&1 | tail -1)"
    log "$name: fastapi and uvicorn installed in $((SECONDS - started)) s"
  }

  total=$SECONDS
  for release in "${RELEASES[@]}"; do
    # shellcheck disable=SC2086
    ensure $release
  done
  for added in "${ADDED[@]}"; do
    # shellcheck disable=SC2086
    ensure_added $added
  done

  ensure_web 3.9-bullseye python3
  ensure_web 3.13-trixie python3
  ensure_web 3.14-forky python3
  ensure_web 3.15-forky python3.15 pydantic==2.14.4 pydantic-core==2.50.5

  [[ -x $HOST_PYTHON ]] || die "$HOST_PYTHON missing (apt-get install python3.11)"
  host_version=$("$HOST_PYTHON" -c 'import sys; print(" ".join(sys.version.split()))')
  log "3.11-host: $HOST_PYTHON: Python $host_version"

  {
    for release in "${RELEASES[@]}" "${ADDED[@]}"; do
      name=${release%% *}
      printf '%s\t%s\n' "$name" "$(cat "$CACHE/$name/stamp")"
    done
    printf '3.11-host\t%s\n' "$host_version"
  } >"$CACHE/versions.txt"
  log "done in $((SECONDS - total)) s; versions in $CACHE/versions.txt"
}

main "$@"
exit
