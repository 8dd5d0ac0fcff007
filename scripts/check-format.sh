#!/usr/bin/env bash
# Every tracked C source and header is formatted with the repo's
# .clang-format (clang-format from Debian, as scripts/setup.sh installs it).
# Prints the offending files and exits 1 when any is not.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check-format: not formatted (run clang-format -i): %s\n' "${bad[@]}"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
