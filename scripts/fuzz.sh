#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for FUZZ_SECONDS seconds each (default 30) and fails on
# any crash, printing the executions of each target. Installs cargo-fuzz when missing.
#
#   bash scripts/fuzz.sh                                   # every target, 30 s each
#   FUZZ_SECONDS=180 FUZZ_TARGETS="socket connection" bash scripts/fuzz.sh
#   FUZZ_SANITIZER=address bash scripts/fuzz.sh            # with AddressSanitizer
#
# No sanitizer by default: zmtp-proto has no unsafe code, and AddressSanitizer makes the
# targets 3-4 times slower; panics (failed invariants, overflow checks, which stay on)
# and runaway memory (-rss_limit_mb) are caught either way.
# cargo-fuzz needs nightly-only compiler flags: RUSTC_BOOTSTRAP=1 allows them on stable.
# The seeds in fuzz/corpus/TARGET are only read; what the fuzzer finds goes to
# fuzz/work/TARGET (kept between runs, ignored by git), crashes to fuzz/artifacts/TARGET.
# Replay a crash with: RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-...
# (from fuzz/), or through the body in a test: zmtp_testkit::fuzz::TARGET(&bytes).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-30}"
sanitizer="${FUZZ_SANITIZER:-none}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"

echo "== building the fuzz targets"
start=$SECONDS
cargo fuzz build -s "$sanitizer"
echo "   built in $((SECONDS - start)) s"

failed=""
summary=""
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
