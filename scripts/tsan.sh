#!/usr/bin/env bash
# The blocking driver's tests (zmtp-mio: its application threads and its I/O thread share
# the context's state) under ThreadSanitizer, on the nightly toolchain with the standard
# library rebuilt instrumented (rust-src). Not part of the test command: it rebuilds
# everything, and runs several times slower.
#
#   bash scripts/tsan.sh                 every zmtp-mio test (examples built first)
#   bash scripts/tsan.sh --test basic    only some (cargo test's own arguments)
#
# Reports data races as "WARNING: ThreadSanitizer" blocks and counts them at the end. The
# allocation-count test may fail under the sanitizer's slowdown (more, smaller batches):
# that is timing, not a race.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "the nightly toolchain is missing: rustup toolchain install nightly" >&2
  exit 1
fi
rustup component add rust-src --toolchain nightly >/dev/null 2>&1 || {
  echo "rust-src for nightly could not be installed" >&2
  exit 1
}

target=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=0 ${TSAN_OPTIONS:-}"
export CARGO_TARGET_DIR=target/tsan
log=$(mktemp)
trap 'rm -f "$log"' EXIT

cargo +nightly build -Zbuild-std --target "$target" -p zmtp-mio --examples
cargo +nightly test -Zbuild-std --target "$target" -p zmtp-mio --lib --tests --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
races=$(grep -c 'WARNING: ThreadSanitizer' "$log" || true)
echo "== ThreadSanitizer reports: $races (tests exit status $status)"
[ "$races" = 0 ]
