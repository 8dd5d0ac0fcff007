# debian-mirror.sh — sourced by scripts/setup-pythons*.sh: the Debian
# mirror both fetch interpreters from, found the same way.
#
# find_mirror prints the first Debian archive URI of this machine's APT
# sources (deb822 *.sources, else one-line sources.list), e.g.
# http://deb.debian.org/debian, or nothing.
find_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' "$f" | grep -E '/debian/?$' | head -1 || true)
    [[ -n $uri ]] && { echo "${uri%/}"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' "$f" \
      | grep -E '/debian/?$' | head -1 || true)
    [[ -n $uri ]] && { echo "${uri%/}"; return; }
  done
}
