#!/usr/bin/env bash
# libzmq 4.3.5's own test suite (the tests/ directory that the zeromq-src crate carries),
# built at run time against any library with libzmq's ABI and run against it.
#
#   bash scripts/libzmq-suite.sh --lib DIR --include DIR [--draft] [options] [TEST...]
#   bash scripts/libzmq-suite.sh --reference [options] [TEST...]
#
#   --lib DIR       the directory holding the library under test (libzmq.so.5 or libzmq.so);
#                   the tests are linked to it with an rpath and run with it first on
#                   LD_LIBRARY_PATH
#   --include DIR   the directory holding the zmq.h that the tests are compiled against
#   --draft         compile with ZMQ_BUILD_DRAFT_API and run the tests that libzmq's own
#                   build has only with the draft API
#   --reference     the real libzmq 4.3.5, built from zeromq-src's copy with cmake (draft
#                   API, CURVE through libsodium, ws://; no TLS) into the cache below, as
#                   the library under test: implies --draft and zeromq-src's zmq.h
#   --jobs N        compile N at a time (default: the number of cores)
#   --run-jobs N    run N tests at a time (default: twice the number of cores; the tests
#                   mostly wait, and those bound to fixed ports share one lane)
#   --timeout S     seconds a test may run before it is killed (default 60; libzmq's tests
#                   also stop themselves after 60 s with SIGALRM)
#   --list          print each test's classification and exit, building no test
#   TEST...         only these tests (test_ prefix optional)
#
# zeromq-src is found through `cargo metadata` (the package the workspace depends on);
# ZEROMQ_SRC_DIR=DIR names another copy of it.
#
# Which tests apply mirrors libzmq's own Linux build (tests/CMakeLists.txt, Makefile.am)
# and what the library reports through zmq_has(); libzmq/suite/not-applicable.txt lists
# the tests that cannot apply to a library without their feature,
# libzmq/suite/known-failures.txt the ones known to fail, and libzmq/suite/flaky.txt the
# ones with a race of their own (run up to three times), each with its reason. Any other
# test that fails gets a second try, and a pass on it is reported as such. A known
# failure runs once, killed after LIBZMQ_SUITE_KNOWN_TIMEOUT seconds (default 20).
# Prints one line per test (PASS, FAIL, TIMEOUT, BUILD-FAIL, KNOWN, NOT-APPLICABLE), then
# the counts. Exits 0 only when every applicable test not listed as a known failure passes.
#
# Everything built goes under $CARGO_TARGET_DIR/libzmq-suite (default target/): Unity and
# libzmq's testutil are compiled once per header, flags and library, each test once.
# Needs g++, cargo (to locate zeromq-src), libsodium-dev (test_security_curve compiles
# three of libzmq's sources that use it), and cmake for --reference.
set -euo pipefail

# ---- Internal entry points: one compile, or one lane of tests run in sequence. ----------
# (Called by this script itself through xargs; everything they need is in SUITE_*.)

# Compile and link test $1 into $SUITE_BUILD/bin; on failure write its BUILD-FAIL result.
compile_test() {
  local name=$1 build=$SUITE_BUILD
  local src="$build/tree/tests/$name.cpp" bin="$build/bin/$name" log="$build/log/$name.build"
  local -a extra=()
  if [ -x "$bin" ] && [ "$bin" -nt "$src" ] && [ "$bin" -nt "$build/obj/stamp" ]; then
    return 0
  fi
  rm -f "$bin"
  if [ "$name" = test_security_curve ]; then
    # Its CURVE client is libzmq's own code: three sources compiled into the test, which
    # need libsodium. They run in the test process, not in the library under test.
    extra=("$build/tree/src/err.cpp" "$build/tree/src/random.cpp" "$build/tree/src/clock.cpp"
      -lsodium)
  fi
  # shellcheck disable=SC2086 # SUITE_CXXFLAGS is a list of flags
  if ! g++ $SUITE_CXXFLAGS -o "$bin" "$src" "${extra[@]}" "$build"/obj/*.o "$SUITE_LINK" \
    -Wl,-rpath,"$SUITE_LIB" -pthread >"$log" 2>&1; then
    local missing
    missing=$(grep -o "undefined reference to \`[^']*'" "$log" | sed "s/.*\`//; s/'//" |
      sort -u | tr '\n' ' ' || true)
    if [ -n "$missing" ]; then
      printf 'BUILD-FAIL\tthe library lacks: %s\n' "$missing" >"$build/results/$name"
    else
      printf 'BUILD-FAIL\t%s\n' "$(grep -m 3 -E 'error' "$log" | sed 's|^/[^:]*/||' |
        cut -c1-200 | tr '\n' ' ')" >"$build/results/$name"
    fi
    rm -f "$bin"
  fi
}

# Run test $1 once in a scratch directory of its own; set status, secs and summary.
run_once() {
  local name=$1 build=$SUITE_BUILD
  local dir="$SUITE_RUNDIR/$name" log="$build/log/$name.out" rc=0 start end
  rm -rf "$dir"
  mkdir -p "$dir"
  start=$(date +%s.%N)
  (cd "$dir" && LD_LIBRARY_PATH="$SUITE_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 "${limit:-$SUITE_TIMEOUT}" stdbuf -oL "$build/bin/$name") >"$log" 2>&1 </dev/null ||
    rc=$?
  end=$(date +%s.%N)
  rm -rf "$dir"
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  summary=$(grep -E '^[0-9]+ Tests [0-9]+ Failures [0-9]+ Ignored' "$log" | tail -n 1 || true)
  case $rc in
    0) status=PASS ;;
    124 | 137) status=TIMEOUT summary="last: $(last_lines "$log")" ;;
    142) status=TIMEOUT summary="stopped itself (SIGALRM); last: $(last_lines "$log")" ;;
    13[0-9] | 1[4-5][0-9]) status=FAIL summary="killed by SIG$(kill -l $((rc - 128))): $(last_lines "$log")" ;;
    *) status=FAIL summary="exit $rc: $(last_lines "$log")" ;;
  esac
}

# Run tests "$@" one after another, write each result to $SUITE_BUILD/results/NAME and
# print its line. A test listed in flaky.txt that does not pass is run again, up to three
# times in all.
run_lane() {
  local name status secs summary try tries first limit
  for name in "$@"; do
    if [ -e "$SUITE_BUILD/results/$name" ]; then # BUILD-FAIL already
      if grep -q "^${name}[[:space:]]" "$SUITE_KNOWN"; then
        printf 'KNOWN\tBUILD-FAIL, known: %s\n' "$(reason_in "$SUITE_KNOWN" "$name")" \
          >"$SUITE_BUILD/results/$name"
      fi
      print_result "$name"
      continue
    fi
    # Every test gets a second try (reported when it passes only then), a flaky one three.
    tries=2 limit=""
    grep -q "^${name}[[:space:]]" "$SUITE_FLAKY" && tries=3
    # A known failure runs once, with a shorter timeout: it is run to notice when it
    # passes, not to wait for it.
    if grep -q "^${name}[[:space:]]" "$SUITE_KNOWN"; then
      tries=1 limit=$SUITE_KNOWN_TIMEOUT
    fi
    first=""
    for ((try = 1; try <= tries; try++)); do
      run_once "$name"
      [ "$status" = PASS ] && break
      [ -z "$first" ] && first="$status ($summary)"
    done
    if [ "$status" = PASS ] && [ -n "$first" ]; then
      summary+="; flaky, passed on try $try of $tries; try 1: $first"
    elif [ "$status" != PASS ] && [ "$tries" -gt 1 ]; then
      summary+="; failed all $tries tries"
    fi
    if [ "$status" != PASS ] && grep -q "^${name}[[:space:]]" "$SUITE_KNOWN"; then
      summary="$status, known: $(reason_in "$SUITE_KNOWN" "$name")"
      status=KNOWN
    fi
    printf '%s\t%s s; %s\n' "$status" "$secs" "$summary" >"$SUITE_BUILD/results/$name"
    print_result "$name"
  done
}

# The last lines of output $1 worth showing, joined by |: Unity's last two results (of a
# test killed in a case, the last case that ended) and the last line.
last_lines() {
  {
    grep -E ':(PASS|FAIL|IGNORE)(:|$)|^[0-9]+ Tests' "$1" | tail -n 2 || true
    grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true
  } | sed 's|^/[^:]*/tests/||' | cut -c1-200 | uniq | tr '\n' '|' || true
}

# The reason given for test $2 in list file $1.
reason_in() {
  awk -v t="$2" '$1 == t { $1 = ""; sub(/^[ \t]+/, ""); print; exit }' "$1"
}

print_result() {
  local status detail
  IFS=$'\t' read -r status detail <"$SUITE_BUILD/results/$1"
  printf '%-15s %-36s %s\n' "$status" "$1" "$detail"
}

case "${1:-}" in
  __compile) shift; for t in "$@"; do compile_test "$t"; done; exit 0 ;;
  __run) shift; read -r -a lane <<<"$*"; run_lane "${lane[@]}"; exit 0 ;;
esac

# ---- The run. -----------------------------------------------------------------------------

cd "$(dirname "$0")/.."
root=$PWD
suite_dir=$root/libzmq/suite
target=${CARGO_TARGET_DIR:-$root/target}
cache=$target/libzmq-suite

lib="" include="" draft=0 reference=0 list=0 timeout_s=60
jobs=$(nproc 2>/dev/null || echo 2)
run_jobs=$((jobs * 2))
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --lib) lib=$2; shift 2 ;;
    --include) include=$2; shift 2 ;;
    --draft) draft=1; shift ;;
    --reference) reference=1; draft=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --run-jobs) run_jobs=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) only+=("test_${1#test_}"); shift ;;
  esac
done

# zeromq-src's directory, from cargo's own view of the workspace's dependencies.
zeromq_src=${ZEROMQ_SRC_DIR:-}
if [ -z "$zeromq_src" ]; then
  manifest=$(cargo metadata --format-version 1 --manifest-path "$root/Cargo.toml" |
    grep -o '"manifest_path":"[^"]*/zeromq-src-[^"/]*/Cargo.toml"' | head -n 1 |
    sed 's/^"manifest_path":"//; s/"$//')
  if [ -z "$manifest" ]; then
    echo "cargo metadata names no zeromq-src package (set ZEROMQ_SRC_DIR)" >&2
    exit 1
  fi
  zeromq_src=$(dirname "$manifest")
fi
vendor=$zeromq_src/vendor
if [ ! -f "$vendor/tests/testutil.cpp" ]; then
  echo "$vendor has no libzmq tests/" >&2
  exit 1
fi

if [ "$reference" = 1 ]; then
  if ! command -v cmake >/dev/null; then
    echo "--reference needs cmake (apt-get install cmake)" >&2
    exit 1
  fi
  ref=$cache/reference
  mkdir -p "$ref"
  echo "== building the reference libzmq 4.3.5 from $vendor in $ref"
  if ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$vendor" "$ref/CMakeCache.txt" 2>/dev/null; then
    rm -rf "$ref"
    mkdir -p "$ref"
    nice cmake -S "$vendor" -B "$ref" -DCMAKE_BUILD_TYPE=Release -DENABLE_DRAFTS=ON \
      -DWITH_LIBSODIUM=ON -DENABLE_CURVE=ON -DWITH_TLS=OFF -DWITH_LIBBSD=OFF \
      -DBUILD_TESTS=OFF -DBUILD_STATIC=OFF -DWITH_DOCS=OFF -DWITH_DOC=OFF \
      -DWITH_PERF_TOOL=OFF -DENABLE_CPACK=OFF >"$ref/configure.log" 2>&1 ||
      { tail -n 20 "$ref/configure.log" >&2; exit 1; }
  fi
  nice make -s -C "$ref" -j "$jobs" libzmq >"$ref/build.log" 2>&1 ||
    { tail -n 20 "$ref/build.log" >&2; exit 1; }
  lib=$ref/lib
  include=$vendor/include
fi

if [ -z "$lib" ] || [ -z "$include" ]; then
  echo "usage: $0 --lib DIR --include DIR [--draft] [--jobs N] [--timeout S] [TEST...]" >&2
  echo "   or: $0 --reference [--jobs N] [--timeout S] [TEST...]" >&2
  exit 2
fi
lib=$(cd "$lib" && pwd -P)
include=$(cd "$include" && pwd -P)
if [ -e "$lib/libzmq.so.5" ]; then
  link=$lib/libzmq.so.5
elif [ -e "$lib/libzmq.so" ]; then
  link=$lib/libzmq.so
else
  echo "$lib holds neither libzmq.so.5 nor libzmq.so" >&2
  exit 1
fi
if [ ! -f "$include/zmq.h" ]; then
  echo "$include holds no zmq.h" >&2
  exit 1
fi
# The tests will ask the loader for the library's soname (libzmq.so.5): when DIR holds
# only libzmq.so, the loader would find another libzmq.so.5 (the system's) instead, so the
# soname is linked to it in a directory of our own.
soname=$(readelf -d "$link" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ -n "$soname" ] && [ ! -e "$lib/$soname" ]; then
  alias_dir=$cache/lib-$(printf '%s' "$link" | sha256sum | cut -c1-16)
  mkdir -p "$alias_dir"
  ln -sfn "$(readlink -f "$link")" "$alias_dir/$soname"
  echo "== $lib has no $soname (the library's soname): linked to it from $alias_dir"
  lib=$alias_dir
  link=$alias_dir/$soname
fi

# What the library says it has, through zmq_has(), and where it really was loaded from.
mkdir -p "$cache"
probe_dir=$(mktemp -d "$cache/probe.XXXXXX")
trap 'rm -rf "$probe_dir"' EXIT
cat >"$probe_dir/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <zmq.h>
int main (void)
{
    static const char *const caps[] = {"ipc", "pgm", "tipc", "norm", "curve",
                                       "gssapi", "vmci", "draft", "WS", "WSS"};
    int major, minor, patch;
    Dl_info info;
    zmq_version (&major, &minor, &patch);
    printf ("version %d.%d.%d\n", major, minor, patch);
    if (dladdr ((void *) zmq_version, &info) && info.dli_fname)
        printf ("path %s\n", info.dli_fname);
    for (unsigned i = 0; i < sizeof caps / sizeof caps[0]; i++)
        printf ("has %s %d\n", caps[i], zmq_has (caps[i]) ? 1 : 0);
    return 0;
}
EOF
gcc -I"$include" -o "$probe_dir/probe" "$probe_dir/probe.c" "$link" -Wl,-rpath,"$lib" -ldl
probe=$(LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$probe_dir/probe")
has() { grep -qx "has $1 1" <<<"$probe"; }
version=$(sed -n 's/^version //p' <<<"$probe")
loaded=$(sed -n 's/^path //p' <<<"$probe")
caps=$(sed -n 's/^has \(.*\) 1$/\1/p' <<<"$probe" | tr '\n' ' ')
echo "== library: $link (zmq_version $version, loaded from ${loaded:-?}); zmq_has: ${caps:-nothing}"
if [ "$(readlink -f "$loaded")" != "$(readlink -f "$link")" ]; then
  echo "the library was loaded from '$loaded', not from $link" >&2
  exit 1
fi
echo "== header: $include/zmq.h; draft API: $([ "$draft" = 1 ] && echo yes || echo no)"
if has draft && [ "$draft" = 0 ]; then
  echo "   (the library has the draft API: --draft would run the draft tests too)"
fi

# The capability macros libzmq's generated platform.hpp would carry for this library.
capability_macros() {
  has ipc && echo '#define ZMQ_HAVE_IPC'
  has pgm && echo '#define ZMQ_HAVE_OPENPGM'
  has tipc && echo '#define ZMQ_HAVE_TIPC'
  has norm && echo '#define ZMQ_HAVE_NORM'
  has curve && printf '%s\n' '#define ZMQ_HAVE_CURVE' '#define ZMQ_USE_LIBSODIUM'
  has gssapi && echo '#define HAVE_LIBGSSAPI_KRB5'
  has vmci && echo '#define ZMQ_HAVE_VMCI'
  has WS && printf '%s\n' '#define ZMQ_HAVE_WS' '#define ZMQ_USE_BUILTIN_SHA1'
  has WSS && echo '#define ZMQ_HAVE_WSS'
  true
}
platform="/* Capabilities of the library under test, from zmq_has(). */
$(capability_macros)
$(cat "$suite_dir/platform.hpp")"

# ---- Which tests apply. --------------------------------------------------------------------

# Built by libzmq only with the draft API (Makefile.am's ENABLE_DRAFTS list; test_busy_poll
# is CMake's, with ZMQ_HAVE_BUSY_POLL, which Linux has).
draft_only=(test_poller test_client_server test_thread_safe test_timers test_radio_dish
  test_scatter_gather test_dgram test_app_meta test_xpub_manual_last_value test_router_notify
  test_peer test_reconnect_options test_msg_init test_hello_msg test_disconnect_msg
  test_channel test_hiccup_msg test_zmq_ppoll_fd test_xsub_verbose test_pubsub_topics_count
  test_zmq_ppoll_signals test_busy_poll)
# Built only with ZMQ_HAVE_IPC (CMake's list).
ipc_only=(test_ipc_wildcard test_pair_ipc test_reqrep_ipc test_rebind_ipc)
# Tests that bind fixed TCP or UDP ports (ENDPOINT_0.. of testutil.hpp, 5555-5569) or a
# fixed abstract socket name, or connect to fixed ports that another test may be bound
# to: they run one after another, in one lane, beside the others.
serial=(test_bind_after_connect_tcp test_dgram test_last_endpoint test_reconnect_options
  test_req_relaxed test_disconnect_msg test_immediate test_radio_dish test_abstract_ipc
  test_bind_src_address test_connect_resolve)
# Whether word $1 is one of the words "$2"...
member() {
  local x=$1
  shift
  [[ " $* " == *" $x "* ]]
}
# The longest, started first so that they do not finish last.
slow_first=(test_heartbeats test_security_zap test_many_sockets test_shutdown_stress
  test_reconnect_ivl test_security_curve test_proxy_hwm test_proxy test_timeo)

all=()
for f in "$vendor"/tests/test_*.cpp; do
  all+=("$(basename "$f" .cpp)")
done
if [ ${#only[@]} -gt 0 ]; then
  for t in "${only[@]}"; do
    if [ ! -f "$vendor/tests/$t.cpp" ]; then
      echo "libzmq has no test $t" >&2
      exit 2
    fi
  done
  all=("${only[@]}")
fi

known_file=$suite_dir/known-failures.txt
na_file=$suite_dir/not-applicable.txt
listed() { grep -q "^$2[[:space:]]" "$1"; }

# Why test $1 does not apply to this library, or nothing.
not_applicable() {
  local t=$1
  if listed "$na_file" "$t"; then
    reason_in "$na_file" "$t"
  elif [ "$draft" = 0 ] && member "$t" "${draft_only[@]}"; then
    echo "libzmq builds it only with the draft API (run with --draft)"
  elif member "$t" "${ipc_only[@]}" && ! has ipc; then
    echo "needs ipc://, which the library does not report (zmq_has)"
  elif [ "$t" = test_security_curve ] && ! has curve; then
    echo "needs CURVE, which the library does not report (zmq_has)"
  elif [ "$t" = test_ws_transport ] && ! has WS; then
    echo "needs ws://, which the library does not report (zmq_has \"WS\")"
  elif [ "$t" = test_wss_transport ] && ! has WSS; then
    echo "needs wss:// (TLS; libzmq's only with GnuTLS), which the library does not report (zmq_has \"WSS\")"
  elif [ "$t" = test_pair_tcp_cap_net_admin ] && [ "$(id -u)" != 0 ]; then
    echo "binds to a device (SO_BINDTODEVICE), which needs CAP_NET_ADMIN: run as root"
  fi
}

applicable=()
declare -A na_reason=()
for t in "${all[@]}"; do
  reason=$(not_applicable "$t")
  if [ -n "$reason" ]; then
    na_reason[$t]=$reason
  else
    applicable+=("$t")
  fi
done

if [ "$list" = 1 ]; then
  for t in "${all[@]}"; do
    if [ -n "${na_reason[$t]:-}" ]; then
      printf '%-15s %-36s %s\n' NOT-APPLICABLE "$t" "${na_reason[$t]}"
    elif listed "$known_file" "$t"; then
      printf '%-15s %-36s %s\n' KNOWN "$t" "$(reason_in "$known_file" "$t")"
    elif listed "$suite_dir/flaky.txt" "$t"; then
      printf '%-15s %-36s %s\n' FLAKY "$t" "$(reason_in "$suite_dir/flaky.txt" "$t" | cut -c1-100)..."
    else
      printf '%-15s %s\n' APPLICABLE "$t"
    fi
  done
  echo "${#applicable[@]} applicable, $((${#all[@]} - ${#applicable[@]})) not applicable"
  exit 0
fi

# ---- Build. --------------------------------------------------------------------------------

cxxflags="-std=c++11 -O1 -g0 -w -DUNITY_USE_COMMAND_LINE_ARGS -DUNITY_EXCLUDE_FLOAT"
[ "$draft" = 1 ] && cxxflags+=" -DZMQ_BUILD_DRAFT_API"
# One build directory per header, flags, platform header, library and libzmq copy.
key=$( (printf '%s\n' "$vendor" "$include" "$cxxflags" "$platform" "$link"
  cat "$include/zmq.h") | sha256sum | cut -c1-16)
build=$cache/build-$key
cxxflags+=" -I$vendor/external/unity"
mkdir -p "$build/obj" "$build/bin" "$build/log"
rm -rf "$build/results"
mkdir -p "$build/results"

# A tree where libzmq's relative includes find the header under test: tests/ and src/ are
# links to zeromq-src's files, include/ is the header's directory, src/platform.hpp is ours.
tree=$build/tree
if [ ! -d "$tree" ] || [ "$(cat "$tree/src/platform.hpp" 2>/dev/null)" != "$platform" ]; then
  rm -rf "$tree"
  mkdir -p "$tree/tests" "$tree/src"
  ln -s "$include" "$tree/include"
  for f in "$vendor"/tests/*; do ln -s "$f" "$tree/tests/"; done
  for f in "$vendor"/src/*; do ln -s "$f" "$tree/src/"; done
  printf '%s\n' "$platform" >"$tree/src/platform.hpp"
fi

start_all=$SECONDS
objs_ok=1
for f in "$vendor/external/unity/unity.c" "$tree/tests/testutil.cpp" \
  "$tree/tests/testutil_unity.cpp" "$tree/tests/testutil_monitoring.cpp" \
  "$tree/tests/testutil_security.cpp"; do
  [ "$build/obj/$(basename "${f%.*}").o" -nt "$f" ] || objs_ok=0
done
if [ "$objs_ok" = 0 ] || [ ! -e "$build/obj/stamp" ]; then
  echo "== compiling Unity and libzmq's testutil"
  rm -f "$build"/obj/*
  # shellcheck disable=SC2086
  gcc ${cxxflags/-std=c++11/} -c -o "$build/obj/unity.o" "$vendor/external/unity/unity.c"
  for u in testutil testutil_unity testutil_monitoring testutil_security; do
    echo "$u"
  done | xargs -P "$jobs" -I{} sh -c \
    "g++ $cxxflags -c -o '$build/obj/{}.o' '$tree/tests/{}.cpp'"
  touch "$build/obj/stamp"
fi

export SUITE_BUILD=$build SUITE_CXXFLAGS=$cxxflags SUITE_LINK=$link SUITE_LIB=$lib
export SUITE_TIMEOUT=$timeout_s SUITE_RUNDIR=$build/run SUITE_KNOWN=$known_file
export SUITE_KNOWN_TIMEOUT=${LIBZMQ_SUITE_KNOWN_TIMEOUT:-20}
export SUITE_FLAKY=$suite_dir/flaky.txt
echo "== compiling ${#applicable[@]} tests ($jobs at a time)"
printf '%s\n' "${applicable[@]}" | nice xargs -P "$jobs" -n 4 bash "$0" __compile
compile_secs=$((SECONDS - start_all))
echo "== compiled in $compile_secs s; running ($run_jobs at a time, $timeout_s s each at most)"

# ---- Run. ----------------------------------------------------------------------------------

lanes=()
serial_lane=""
declare -A queued=()
for t in "${slow_first[@]}" "${applicable[@]}"; do
  member "$t" "${applicable[@]}" || continue
  [ -n "${queued[$t]:-}" ] && continue
  queued[$t]=1
  if member "$t" "${serial[@]}"; then
    serial_lane+="$t "
  else
    lanes+=("$t")
  fi
done
[ -n "$serial_lane" ] && lanes=("$serial_lane" "${lanes[@]}")
run_start=$SECONDS
if [ ${#lanes[@]} -gt 0 ]; then
  printf '%s\n' "${lanes[@]}" | xargs -P "$run_jobs" -I{} bash "$0" __run {} ||
    echo "== a runner stopped early: the tests it left have no result"
fi
run_secs=$((SECONDS - run_start))

for t in "${all[@]}"; do
  [ -n "${na_reason[$t]:-}" ] && printf '%-15s %-36s %s\n' NOT-APPLICABLE "$t" "${na_reason[$t]}"
done

declare -A count=([PASS]=0 [FAIL]=0 [TIMEOUT]=0 [BUILD-FAIL]=0 [KNOWN]=0)
bad=()
for t in "${applicable[@]}"; do
  if [ ! -e "$build/results/$t" ]; then
    printf 'FAIL\tno result: its runner stopped before it ended\n' >"$build/results/$t"
    SUITE_BUILD=$build print_result "$t"
  fi
  IFS=$'\t' read -r status _ <"$build/results/$t"
  count[$status]=$((${count[$status]} + 1))
  case $status in
    PASS)
      if listed "$known_file" "$t"; then
        echo "note: $t passes but is listed in known-failures.txt"
      fi
      ;;
    KNOWN) ;;
    *) bad+=("$t") ;;
  esac
done
echo "== libzmq test suite against $link (zmq_version $version): ${#all[@]} tests," \
  "${#applicable[@]} applicable, $((${#all[@]} - ${#applicable[@]})) not applicable;" \
  "compiled in $compile_secs s, ran in $run_secs s"
flaky_passes=$(grep -l 'flaky, passed on try' "$build"/results/* | xargs -r -n1 basename |
  tr '\n' ' ' || true)
if [ -n "$flaky_passes" ]; then
  echo "== passed only on a retry (listed in flaky.txt): $flaky_passes"
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "== not passing: ${bad[*]}"
fi
echo "== ${count[PASS]} passed, ${count[FAIL]} failed, ${count[TIMEOUT]} timed out," \
  "${count[BUILD-FAIL]} failed to build, ${count[KNOWN]} known failures"
echo "libzmq-suite: ${count[PASS]} passed, ${#bad[@]} failed"
[ ${#bad[@]} -eq 0 ]
