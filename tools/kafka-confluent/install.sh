#!/usr/bin/env bash
# Installs Confluent's Kafka client (@confluentinc/kafka-javascript, pinned by the lockfile
# beside this script) once per machine, outside the repository, for the Kafka tests'
# Confluent runs (test/queue/kafka.test.ts): into $IDEM_KAFKA_CONFLUENT_DIR, by default
# /usr/local/lib/idem-kafka-confluent. Not a dependency in the root package.json, so that
# `npm ci` does not compile librdkafka on every run.
#
# The package's install script fetches a prebuilt binding from GitHub, which is not
# reachable here, then builds one with node-gyp. Its default build links librdkafka
# statically and downloads zlib, OpenSSL, zstd and curl sources for that (also
# unreachable), so this builds with CKJS_LINKING=dynamic: librdkafka 2.15.1 from the
# package's own sources, against the system's OpenSSL and zlib when their -dev packages
# are there (features without them are left out), linked beside the binding. About 2 min
# of CPU (make, g++ and python3 are needed). Debian's librdkafka-dev (2.0.2) is too old
# for the binding (rd_kafka_Uuid_t, rd_kafka_DescribeTopics and more are missing).
#
# Idempotent: does nothing when the folder holds this lockfile and the client loads
# (a new Node ABI makes it load no more, and so builds again).
# Usage: tools/kafka-confluent/install.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
DIR="${IDEM_KAFKA_CONFLUENT_DIR:-/usr/local/lib/idem-kafka-confluent}"

loads() { # folder
  (cd "$1" && node -e "require('@confluentinc/kafka-javascript')") >/dev/null 2>&1
}

if cmp -s "${here}/package-lock.json" "${DIR}/package-lock.json" && loads "$DIR"; then
  echo "kafka-confluent: ${DIR} has it"
  exit 0
fi

work="${DIR}.build-$$"
trap 'rm -rf "$work"' EXIT
rm -rf "$work"
mkdir -p "$work"
cp "${here}/package.json" "${here}/package-lock.json" "$work/"
echo "kafka-confluent: building @confluentinc/kafka-javascript (librdkafka from its sources) in ${work}"
started=$SECONDS
if ! (cd "$work" && CKJS_LINKING=dynamic npm ci --no-audit --no-fund --foreground-scripts >"${work}/build.log" 2>&1); then
  grep -E 'error|Error|failed' "${work}/build.log" | grep -v '^npm http' | tail -n 30 >&2
  exit 1
fi
loads "$work" || { echo "kafka-confluent: built, but it does not load" >&2; exit 1; }
# The binding finds librdkafka by a path relative to itself, so the folder can move.
rm -rf "$DIR"
mv "$work" "$DIR"
rm -f "${DIR}/build.log"
echo "kafka-confluent: installed in ${DIR} in $((SECONDS - started)) s"
