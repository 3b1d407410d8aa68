#!/usr/bin/env bash
# Every check and test of the workspace, in named steps: a failure names its step.
# Installs what is missing first: libzmq (the real peer the conformance tests run against)
# through apt-get when run as root, and valgrind for the icount step.
#
#   bash scripts/test.sh            every step
#   bash scripts/test.sh STEP...    only these steps (lint, nostd, tests, conformance, fuzz, icount)
set -eEuo pipefail
cd "$(dirname "$0")/.."

STEPS=(lint nostd tests conformance fuzz icount)
step_name=setup
trap 'echo "== FAILED in step: $step_name" >&2' ERR

if [ ! -e /usr/include/zmq.h ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing libzmq3-dev"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libzmq3-dev >/dev/null
  else
    echo "libzmq3-dev is missing: run 'sudo apt-get install libzmq3-dev' (or run this as root)" >&2
    exit 1
  fi
fi

# Formatting, lints on every target, and the docs (broken links and missing docs are errors).
lint() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets -- -D warnings
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -q -p zmtp-proto -p zmtp-driver -p zmtp-async -p zmtp-tokio -p zmtp-smol -p zmtp-mio -p zmtp-conformance
}

# The core without std: built bare, with CURVE, and with alloc only, whose tests run too
# (the library and integration tests; the doctests are std programs).
nostd() {
  cargo build -p zmtp-proto --no-default-features
  cargo clippy -p zmtp-proto --no-default-features -- -D warnings
  cargo build -p zmtp-proto --no-default-features --features curve
  cargo clippy -p zmtp-proto --no-default-features --features curve -- -D warnings
  cargo clippy -p zmtp-proto --no-default-features --features alloc --all-targets -- -D warnings
  cargo test -p zmtp-proto --no-default-features --features alloc --tests
}

# Every crate's own tests. The workspace build has CURVE on (the tokio driver enables it);
# the core alone is tested without it too.
tests() {
  cargo test --workspace --exclude zmtp-conformance
  cargo test -p zmtp-proto
}

# The scenario suite against libzmq and between our drivers, and the hostile peers.
conformance() {
  cargo test -p zmtp-conformance
}

# Every fuzz target under libFuzzer for FUZZ_SECONDS (default 30) each. (Their bodies run as
# tests over the seeds and generated inputs in the `tests` step: zmtp-testkit's fuzz_bodies.)
fuzz() {
  bash scripts/fuzz.sh
}

# Instructions per message of the core's hot paths under callgrind, against the committed
# baseline: fails when one grows more than 5 % (see scripts/icount.sh).
icount() {
  if ! command -v valgrind >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      echo "== installing valgrind"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
    else
      echo "valgrind is missing: run 'sudo apt-get install valgrind' (or run this as root)" >&2
      exit 1
    fi
  fi
  bash scripts/icount.sh
}

selected=("$@")
if [ ${#selected[@]} -eq 0 ]; then
  selected=("${STEPS[@]}")
fi
for s in "${selected[@]}"; do
  case " ${STEPS[*]} " in
    *" $s "*) ;;
    *) echo "unknown step '$s' (steps: ${STEPS[*]})" >&2; exit 2 ;;
  esac
done
for s in "${selected[@]}"; do
  step_name=$s
  echo "== step: $s"
  start=$SECONDS
  "$s"
  echo "== step $s passed in $((SECONDS - start)) s"
done
echo "== all steps passed: ${selected[*]}"
