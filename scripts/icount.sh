#!/usr/bin/env bash
# Instructions per message of the core's hot paths, compared with the committed baseline.
#
# Builds zmtp-icount (profile `icount`: the release settings), runs each scenario under
# `valgrind --tool=callgrind` with N and 2N messages, and reports (Ir(2N) - Ir(N)) / N:
# the instructions per message, set-up and warm-up cancelled out. Fails when a figure grows
# more than 5 % over icount/baseline.txt; says so (without failing) when one falls more
# than 5 %, so that the baseline can follow an improvement.
#
#   bash scripts/icount.sh             measure and compare
#   bash scripts/icount.sh --update    measure, then write the figures as the new baseline
#
# ICOUNT_N (default 10000) sets N.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

N=${ICOUNT_N:-10000}
BASELINE=icount/baseline.txt
SCENARIOS=(push-send pull-recv pub-fanout reqrep push-send-many pull-recv-many router-crowd tokio-each tokio-batch)
TOLERANCE=5

if ! command -v valgrind >/dev/null; then
  echo "valgrind is missing: run 'sudo apt-get install valgrind'" >&2
  exit 1
fi

cargo build -q --profile icount -p zmtp-icount
bin=target/icount/zmtp-icount

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Instructions executed by one run (the `totals:` line of callgrind's output).
instructions() {
  local out="$work/callgrind.$1.$2"
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" -q "$bin" "$1" "$2" >"$work/log" 2>&1; then
    cat "$work/log" >&2
    echo "zmtp-icount $1 $2 failed" >&2
    return 1
  fi
  awk '/^totals:/ { print $2 }' "$out"
}

# The committed figure of a scenario, if any.
baseline_of() {
  [ -f "$BASELINE" ] && awk -v s="$1" '$1 == s { print $2 }' "$BASELINE" || true
}

declare -A measured
printf '%-12s %22s %10s %9s\n' scenario instructions/message baseline change%
grew=()
fell=()
missing=()
for s in "${SCENARIOS[@]}"; do
  one=$(instructions "$s" "$N")
  two=$(instructions "$s" $((2 * N)))
  per=$(awk -v a="$one" -v b="$two" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / n }')
  measured[$s]=$per
  base=$(baseline_of "$s")
  if [ -z "$base" ]; then
    printf '%-12s %22s %10s %9s\n' "$s" "$per" - -
    missing+=("$s")
    continue
  fi
  change=$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%+.2f", (p - b) / b * 100 }')
  printf '%-12s %22s %10s %9s\n' "$s" "$per" "$base" "$change"
  if awk -v c="$change" -v t="$TOLERANCE" 'BEGIN { exit !(c > t) }'; then
    grew+=("$s")
  elif awk -v c="$change" -v t="$TOLERANCE" 'BEGIN { exit !(c < -t) }'; then
    fell+=("$s")
  fi
done

if [ "$update" = 1 ]; then
  {
    echo "# Instructions per 64-byte message of each zmtp-icount scenario: (Ir(2N) - Ir(N)) / N"
    echo "# under valgrind --tool=callgrind, N = $N, profile icount (release settings), rustc"
    echo "# $(rustc --version | cut -d' ' -f2), valgrind $(valgrind --version | sed 's/^valgrind-//')."
    echo "# Written by 'bash scripts/icount.sh --update'; checked by 'bash scripts/icount.sh'."
    for s in "${SCENARIOS[@]}"; do
      echo "$s ${measured[$s]}"
    done
  } >"$BASELINE"
  echo "baseline written to $BASELINE"
  exit 0
fi

if [ ${#fell[@]} -gt 0 ]; then
  echo "fell more than ${TOLERANCE} %: ${fell[*]} (if this is an improvement, record it: bash scripts/icount.sh --update)"
fi
if [ ${#grew[@]} -gt 0 ]; then
  echo "FAILED: grew more than ${TOLERANCE} % over $BASELINE: ${grew[*]}" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "FAILED: no baseline figure for ${missing[*]} in $BASELINE (bash scripts/icount.sh --update)" >&2
  exit 1
fi
echo "instruction counts within ${TOLERANCE} % of the baseline"
