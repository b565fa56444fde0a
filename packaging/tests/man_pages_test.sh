#!/usr/bin/env bash
# packaging.man_pages: each generated man page names every option that its program's --help (and
# each subcommand's --help) names, and groff renders it without a warning.
# Usage: man_pages_test.sh MAN_DIR 'PAGE|COMMAND|SUBCOMMANDS'...
set -euo pipefail
dir=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-man-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for spec in "$@"; do
  IFS='|' read -r page command subs <<<"$spec"
  [[ -s $dir/$page ]] || fail "$page not generated"
  groff -man -Tascii -ww -z "$dir/$page" 2>"$work/warnings"
  [[ -s $work/warnings ]] && fail "$page: groff: $(cat "$work/warnings")"
  # Rendered text, wide enough that no option is split across lines.
  groff -man -Tascii -rLL=400n -P-cbou "$dir/$page" 2>/dev/null >"$work/text"
  n=0
  for sub in "" $subs; do
    # shellcheck disable=SC2086
    $command $sub --help >"$work/help" 2>&1 || fail "$command $sub --help"
    # Options as --help names them; a token ending in '-' is an option wrapped across lines
    # (argparse breaks after hyphens), named whole elsewhere in the help.
    grep -oE -- '(^|[][ ,(|])--?[A-Za-z][A-Za-z0-9-]*' "$work/help" | sed -E 's/^[][ ,(|]//' |
      grep -v -- '-$' | sort -u >"$work/options"
    # Each looked up on its own: one grep -o over all of them reports only the longest of
    # overlapping matches (--batch-size hides --batch).
    missing=$(while read -r opt; do grep -qF -- "$opt" "$work/text" || echo "$opt"; done \
              <"$work/options")
    [[ -z $missing ]] || fail "$page lacks $(tr "\n" " " <<<"$missing")(from $command $sub --help)"
    n=$((n + $(wc -l <"$work/options")))
  done
  echo "ok $page: $n options"
done
