#!/usr/bin/env bash
# The fuzz targets in fuzz/ under libFuzzer. Installs cargo-fuzz when missing.
#
#   bash scripts/fuzz.sh                                   # every target, 30 s each
#   FUZZ_SECONDS=180 FUZZ_TARGETS="socket connection" bash scripts/fuzz.sh
#   FUZZ_SANITIZER=address bash scripts/fuzz.sh            # with AddressSanitizer
#   bash scripts/fuzz.sh campaign [TARGET...]              # campaigns that grow fuzz/corpus
#
# Short runs (the default): each target for FUZZ_SECONDS (default 30) from the kept corpus
# in fuzz/corpus/TARGET, which they only read; what they find goes to fuzz/work/TARGET
# (kept between runs, ignored by git). Fails on any crash, printing each target's
# executions and coverage.
#
# Campaigns (`campaign`): each target (all by default) on FUZZ_JOBS processes (default:
# every core) until its coverage has not grown for FUZZ_PLATEAU seconds (default 600) or
# FUZZ_MAX seconds have passed (default 3600), adding what it finds to fuzz/corpus/TARGET,
# which is then minimised (`cargo fuzz cmin`): that directory is committed, so that the
# short runs and the corpus replay in `cargo test -p zmtp-testkit` start from it. Prints a
# table per target: inputs run, coverage features at the start and at the end, when the
# last new feature came, why it stopped, the corpus kept, and any crash with its
# reproducer. The rows are also appended to fuzz/work/campaigns.md.
#
# No sanitizer by default: zmtp-proto has no unsafe code, and AddressSanitizer makes the
# targets 3-4 times slower; panics (failed invariants, overflow checks, which stay on)
# and runaway memory (-rss_limit_mb) are caught either way.
# cargo-fuzz needs nightly-only compiler flags: RUSTC_BOOTSTRAP=1 allows them on stable.
# Crashes go to fuzz/artifacts/TARGET. Replay one with:
# RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-... (from fuzz/), or
# through the body in a test: zmtp_testkit::fuzz::TARGET(&bytes).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-30}"
sanitizer="${FUZZ_SANITIZER:-none}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

mode=short
if [ "${1:-}" = campaign ]; then
  mode=campaign
  shift
fi
if [ $# -gt 0 ]; then
  targets="$*"
else
  targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
fi

echo "== building the fuzz targets"
start=$SECONDS
cargo fuzz build -s "$sanitizer"
echo "   built in $((SECONDS - start)) s"

# The last progress line of a libFuzzer log in fork mode, as "inputs features seconds"
# ("#369630: cov: 126 ft: 169 corp: 4 exec/s: ... time: 2s job: 1 ...").
progress() {
  sed -n 's/^#\([0-9]*\): cov: [0-9]* ft: \([0-9]*\) corp: .* time: \([0-9]*\)s.*/\1 \2 \3/p' "$1" |
    tail -n "${2:-1}"
}

# One campaign: fuzz TARGET into its corpus directory until its features stop growing.
campaign_one() {
  local target=$1 log="work/$1.campaign.log" pid stop=max
  local inputs=0 features=0 first last_growth=0 at=0 line
  mkdir -p "corpus/$target"
  # The coverage of the corpus as it is: one pass over it, no fuzzing.
  first=$(cargo fuzz run -s "$sanitizer" "$target" "corpus/$target" -- -runs=0 2>&1 |
    sed -n 's/.*INITED .* ft: \([0-9]*\) .*/\1/p' | tail -n 1)
  features=${first:-0}
  # Its own process group, so that a plateau stops the fuzzer and its workers at once.
  setsid cargo fuzz run -s "$sanitizer" "$target" "corpus/$target" -- \
    -fork="$jobs" -max_total_time="$max" -rss_limit_mb=2048 -timeout=10 >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    line=$(progress "$log")
    [ -n "$line" ] || continue
    read -r inputs f at <<<"$line"
    if [ "$f" -gt "$features" ]; then
      features=$f
      last_growth=$at
    fi
    if [ $((at - last_growth)) -ge "$plateau" ]; then
      stop=plateau
      kill -INT -- "-$pid" 2>/dev/null || true
      break
    fi
  done
  local status=0
  wait "$pid" || status=$?
  line=$(progress "$log")
  if [ -n "$line" ]; then
    read -r inputs f at <<<"$line"
    [ "$f" -le "$features" ] || { features=$f; last_growth=$at; }
  fi
  local crash="none"
  if [ "$stop" = max ] && [ "$status" -ne 0 ] && grep -q 'crash\|deadly signal\|panicked' "$log"; then
    stop=crash
    crash=$(grep -o "artifacts/$target/[^ ]*" "$log" | tail -n 1)
    failed="$failed $target"
    tail -n 40 "$log"
    [ -e "$crash" ] && echo "   input $crash: $(od -An -tx1 -v "$crash" | tr -d ' \n')"
  fi
  echo "   minimising corpus/$target"
  cargo fuzz cmin -s "$sanitizer" "$target" "corpus/$target" >"work/$target.cmin.log" 2>&1 ||
    { echo "   cmin failed: see fuzz/work/$target.cmin.log" >&2; failed="$failed $target(cmin)"; }
  local files size
  files=$(find "corpus/$target" -type f | wc -l)
  size=$(find "corpus/$target" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", (s + 1023) / 1024 }')
  row=$(printf '| %s | %s | %s | %s | %s s | %s s (%s) | %s files, %s KiB | %s |' \
    "$target" "$inputs" "${first:-?}" "$features" "$last_growth" "$at" "$stop" "$files" "$size" "$crash")
  echo "   $row"
  summary="$summary$row"$'\n'
  echo "$row" >>work/campaigns.md
}

failed=""
summary=""
if [ "$mode" = campaign ]; then
  jobs="${FUZZ_JOBS:-$(nproc)}"
  plateau="${FUZZ_PLATEAU:-600}"
  max="${FUZZ_MAX:-3600}"
  mkdir -p work
  echo "| $(date -u +%Y-%m-%d) campaign: $jobs jobs, plateau $plateau s, at most $max s | | | | | | | |" >>work/campaigns.md
  for target in $targets; do
    echo "== campaign: $target ($jobs jobs, until $plateau s without a new feature, at most $max s)"
    campaign_one "$target"
  done
  echo "== campaign summary"
  echo "| target | inputs run | features at start | features at end | last new feature at | ran for (stopped by) | corpus kept | crash |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s' "$summary"
  if [ -n "$failed" ]; then
    echo "campaigns failed in:$failed (logs in fuzz/work/, inputs in fuzz/artifacts/)" >&2
    exit 1
  fi
  exit 0
fi

for target in $targets; do
  mkdir -p "work/$target"
  log="work/$target.log"
  echo "== fuzzing $target for ${seconds} s"
  if cargo fuzz run -s "$sanitizer" "$target" "work/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    >"$log" 2>&1; then
    result="ok"
  else
    result="FAILED"
    failed="$failed $target"
    tail -n 60 "$log"
    for crash in artifacts/"$target"/*; do
      [ -e "$crash" ] || continue
      echo "   input $crash: $(od -An -tx1 -v "$crash" | tr -d ' \n')"
    done
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  line=$(printf '%-14s %-6s %12s executions  %s' "$target" "$result" "${runs:-?}" "$cov")
  echo "   $line"
  summary="$summary$line"$'\n'
done

echo "== fuzzing summary (${seconds} s per target)"
printf '%s' "$summary"
if [ -n "$failed" ]; then
  echo "fuzzing found crashes in:$failed (logs in fuzz/work/, inputs in fuzz/artifacts/)" >&2
  exit 1
fi
