#!/usr/bin/env bash
# Every check and test of the workspace, in named steps: a failure names its step.
# Installs what is missing first, through apt-get when run as root: libzmq (the real peer
# the conformance tests run against), libsodium (CURVE in the draft libzmq that
# zmtp-conformance-draft builds from source), pkg-config, JeroMQ (libjeromq-java) and a JDK
# (default-jdk-headless, for javac) for the JeroMQ interop tests, chromium and npm for the
# browser step, valgrind for the icount step, g++ for the libzmq step, and cppzmq, czmq and
# pyzmq (pip, from PyPI) for the tests step's runs of those bindings on our C ABI.
#
#   bash scripts/test.sh            every step
#   bash scripts/test.sh STEP...    only these steps (lint, docs, publish, nostd, tests,
#                                   conformance, libzmq, soak, browser, fuzz, icount)
set -eEuo pipefail
cd "$(dirname "$0")/.."
# No incremental compilation state: it only speeds up rebuilds after small edits, and on a
# clean run it wrote gigabytes under target/ (set CARGO_INCREMENTAL=1 to keep it).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

STEPS=(lint docs publish nostd tests conformance libzmq soak browser fuzz icount)
step_name=setup
trap 'echo "== FAILED in step: $step_name" >&2' ERR

# Install Debian package PACKAGE unless FILE exists: as root through apt-get, otherwise
# say what to run.
need_package() {
  local file=$1 package=$2
  [ -e "$file" ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "== installing $package"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  else
    echo "$package is missing: run 'sudo apt-get install $package' (or run this as root)" >&2
    exit 1
  fi
}

need_package /usr/include/zmq.h libzmq3-dev
need_package /usr/include/sodium.h libsodium-dev
need_package /usr/bin/pkg-config pkg-config
need_package /usr/share/java/jeromq.jar libjeromq-java
need_package /usr/bin/javac default-jdk-headless

# Install cargo tool CRATE at VERSION unless BINARY is on the PATH already.
need_cargo_tool() {
  local binary=$1 crate=$2 version=$3
  command -v "$binary" >/dev/null && return 0
  echo "== installing $crate $version (cargo install)"
  cargo install --locked --quiet "$crate" --version "$version"
}

# pyzmq for python3, which the C ABI's binding test runs on our library: from PyPI with
# pip when missing.
need_pyzmq() {
  python3 -c 'import zmq' 2>/dev/null && return 0
  need_package /usr/bin/python3 python3
  python3 -m pip --version >/dev/null 2>&1 || need_package /usr/bin/pip3 python3-pip
  echo "== installing pyzmq (pip)"
  python3 -m pip install --quiet pyzmq 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pyzmq
}

# Formatting, lints on every target, and the docs (broken links and missing docs are errors).
lint() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets -- -D warnings
  cargo clippy -p zmtp-testkit --features cabi --all-targets -- -D warnings
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -q -p zmtp-proto -p zmtp-driver -p zmtp-async -p zmtp-tokio -p zmtp-smol -p zmtp-mio -p zmtp-uring -p zmtp-file -p zmtp -p zmtp-conformance -p zmtp-conformance-draft -p zmtp-testkit -p zmtp-libzmq
}

# The book (docs/, mdBook): built, every internal link checked against the pages and
# anchors it produced, and its Rust code blocks compiled as the doctests of
# zmtp-conformance (which depends on every crate they use), with the README's.
docs() {
  need_cargo_tool mdbook mdbook 0.5.4
  need_package /usr/bin/python3 python3
  rm -rf docs/book
  mdbook build docs
  python3 scripts/check-book-links.py
  cargo test -q -p zmtp-conformance --doc
}

# Ready to publish: every published crate packaged and built from its package (cargo
# checks the packages against each other through a local registry), and the dependency
# graph's licences, duplicates and sources checked against deny.toml.
publish() {
  need_cargo_tool cargo-deny cargo-deny 0.20.2
  # `cargo package` verifies each crate against the others packaged beside it, through a
  # local registry whose sources it unpacks under CARGO_HOME once per path and version, and
  # builds them as registry crates, whose sources cargo takes as immutable: what an earlier
  # run unpacked and built of the same version would be used instead of today's. Our crates
  # are on no other registry, so every unpacked copy of them is such a leftover; their
  # builds are kept apart (their own target directory) and removed.
  local verify=target/package-verify
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/zmtp-* "$verify"/debug/.fingerprint/zmtp* \
    "$verify"/debug/deps/libzmtp_* "$verify"/debug/deps/zmtp_*
  CARGO_TARGET_DIR="$verify" cargo package --quiet --allow-dirty -p zmtp-proto -p zmtp-driver \
    -p zmtp-async -p zmtp-tokio -p zmtp-smol -p zmtp-mio -p zmtp-uring -p zmtp-file -p zmtp \
    -p zmtp-cli
  cargo deny --log-level error check licenses bans sources
  # A project outside the workspace that depends on zmtp by path, as a user's would on the
  # published crate, builds and runs the README's tokio quick start.
  local scratch=target/scratch-project out
  rm -rf "$scratch"
  mkdir -p "$scratch/src"
  printf '%s\n' '[package]' 'name = "zmtp-scratch"' 'version = "0.0.0"' 'edition = "2021"' \
    'publish = false' '[dependencies]' "zmtp = { path = \"$PWD/zmtp\", features = [\"tokio\"] }" \
    'tokio = { version = "1", features = ["rt", "macros"] }' '[workspace]' >"$scratch/Cargo.toml"
  awk '/^## Quick start: tokio/ {f = 1} f && /^```rust/ {g = 1; next} g && /^```$/ {exit} g {print}' \
    README.md >"$scratch/src/main.rs"
  out=$(cd "$scratch" && CARGO_TARGET_DIR="$PWD/../scratch-target" cargo run -q)
  if [ "$out" != ping ]; then
    echo "the README's quick start printed '$out', not 'ping'" >&2
    return 1
  fi
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
# the core alone is tested without it too. The C ABI's fuzz body and its corpus run on
# their own (feature `cabi` of zmtp-testkit, which links the C ABI: no workspace build may
# get it, as some of its binaries link the system libzmq). The two interop suites run in
# `conformance`.
tests() {
  need_pyzmq
  need_package /usr/include/zmq.hpp cppzmq-dev
  need_package /usr/include/czmq.h libczmq-dev
  cargo test --workspace --exclude zmtp-conformance --exclude zmtp-conformance-draft
  cargo test -p zmtp-proto
  cargo test -p zmtp-testkit --features cabi --lib cabi
  cargo test -p zmtp-testkit --features cabi --test fuzz_bodies
}

# The scenario suite against libzmq and between our drivers, and the hostile peers; then
# the draft socket types against the second peer, a static draft build of libzmq 4.3.5 (its
# own test binaries: they must not link the system libzmq too).
conformance() {
  cargo test -p zmtp-conformance
  cargo test -p zmtp-conformance-draft
}

# The soak harness (README: Soak), 60 s in all: ours, libzmq, and the two mixes (our bound
# sockets with libzmq's connecting ones, and the reverse); fails on any verdict. Built with
# the test profile, whose dependencies the `tests` step has built already (a release build
# would take two minutes more).
soak() {
  cargo run -q --profile test -p zmtp-soak -- --duration 60s --impl all
}

# The browser example in headless Chromium: tokio_browser serves the page and binds a REP
# and a PUB on ws://; the page's own JavaScript speaks ZWS to them; examples/browser/test.mjs
# (playwright-core, driving the system's Chromium) checks what the page shows and writes a
# screenshot to target/browser-test/page.png.
browser() {
  need_package /usr/bin/chromium chromium
  need_package /usr/bin/npm npm
  npm ci --prefix examples/browser --no-audit --no-fund --loglevel=error >/dev/null
  cargo build -q -p zmtp-tokio --example tokio_browser
  local log=target/browser-test/server.log url="" status=0
  mkdir -p target/browser-test
  target/debug/examples/tokio_browser 0 0 0 0 >"$log" 2>&1 &
  browser_server=$!
  trap 'kill "$browser_server" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    url=$(sed -n 's/^open \(http:[^ ]*\)$/\1/p' "$log")
    [ -n "$url" ] && break
    kill -0 "$browser_server" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "$url" ]; then
    node examples/browser/test.mjs "$url" target/browser-test/page.png || status=$?
  else
    echo "tokio_browser printed no URL:" >&2
    cat "$log" >&2
    status=1
  fi
  kill "$browser_server" 2>/dev/null || true
  wait "$browser_server" 2>/dev/null || true
  trap - EXIT
  return "$status"
}

# Every fuzz target under libFuzzer for FUZZ_SECONDS (default 6 here, 30 when
# scripts/fuzz.sh runs alone) each, which keeps the whole command under 30 minutes on a
# 2-core machine. (Their bodies run as tests over the seeds and generated inputs in the
# `tests` step: zmtp-testkit's fuzz_bodies.)
fuzz() {
  FUZZ_SECONDS="${FUZZ_SECONDS:-6}" bash scripts/fuzz.sh
}

# Instructions per message of the core's hot paths under callgrind, against the committed
# baseline: fails when one grows more than 5 % (see scripts/icount.sh).
icount() {
  need_package /usr/bin/valgrind valgrind
  bash scripts/icount.sh
}

# libzmq 4.3.5's own test suite (scripts/libzmq-suite.sh: built from zeromq-src's copy at
# run time) against our C ABI, zmtp-libzmq's libzmq.so.5 built in release, compiled against
# our zmq.h with the draft API. Fails when a test that applies and is not listed in
# libzmq/suite/known-failures.txt fails. On a 2-core machine, besides the library's release
# build: 10 to 40 s to compile the tests, two to three minutes to run them.
libzmq() {
  need_package /usr/bin/g++ g++
  cargo build --release -p zmtp-libzmq
  bash scripts/libzmq-suite.sh --lib "${CARGO_TARGET_DIR:-target}/release" \
    --include libzmq/include --draft
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
