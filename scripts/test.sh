#!/usr/bin/env bash
# Every check and test of the workspace. Installs what is missing first: libzmq (the real
# peer the conformance tests run against) through apt-get when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

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

echo "== rustfmt"
cargo fmt --all -- --check
echo "== clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== zmtp-proto without std and alloc, and with alloc only"
cargo build -p zmtp-proto --no-default-features
cargo clippy -p zmtp-proto --no-default-features -- -D warnings
cargo build -p zmtp-proto --no-default-features --features alloc
echo "== zmtp-proto with CURVE, without std"
cargo build -p zmtp-proto --no-default-features --features curve
cargo clippy -p zmtp-proto --no-default-features --features curve -- -D warnings
echo "== docs (broken links and missing docs are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -q -p zmtp-proto -p zmtp-async -p zmtp-tokio -p zmtp-smol -p zmtp-mio -p zmtp-conformance
echo "== tests"
# The workspace build has CURVE on (the tokio driver enables it); the core alone is tested
# without it too.
cargo test --workspace
cargo test -p zmtp-proto
echo "== fuzz target bodies as tests, then every fuzz target for FUZZ_SECONDS (default 30) each"
cargo clippy -p zmtp-testkit --all-targets -- -D warnings
cargo test -p zmtp-testkit --test fuzz_bodies
bash scripts/fuzz.sh
