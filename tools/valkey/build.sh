#!/usr/bin/env bash
# Builds valkey-server and valkey-cli 8.1.1 from Debian trixie's source (the upstream
# release with non-free files removed; every dependency it needs is bundled) into
# /usr/local/bin, for the tests that need a server with SET … IFEQ (Valkey 8.1 or later).
# Idempotent: does nothing when /usr/local/bin/valkey-server is that version already.
# Usage: tools/valkey/build.sh [prefix]   (default /usr/local; needs gcc, make, curl, xz)
set -euo pipefail

VERSION=8.1.1
TARBALL="valkey_${VERSION}+dfsg1.orig.tar.xz"
URL="http://deb.debian.org/debian/pool/main/v/valkey/${TARBALL}"
# From trixie's Sources index (Checksums-Sha256 of valkey 8.1.1+dfsg1-3+deb13u3).
SHA256=d9bbd82eecb82f359e649a0007ad3dc1b47cc15afa626348ca86b73c4ae2c7ee
PREFIX="${1:-/usr/local}"

if "${PREFIX}/bin/valkey-server" --version 2>/dev/null | grep -q "v=${VERSION} "; then
  echo "valkey: ${PREFIX}/bin/valkey-server ${VERSION} is there"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "valkey: building ${VERSION} from ${URL}"
started=$SECONDS
curl -fsSL --retry 3 -o "${work}/${TARBALL}" "$URL"
echo "${SHA256}  ${work}/${TARBALL}" | sha256sum -c --quiet -
tar -xJf "${work}/${TARBALL}" -C "$work"
# libc's malloc rather than the bundled jemalloc: a shorter build, and the tests measure
# no memory. No TLS, no systemd: the tests speak plain TCP on loopback.
make -C "${work}/valkey-${VERSION}" -j"$(nproc)" MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no valkey-server valkey-cli >"${work}/build.log" 2>&1 || {
  tail -n 50 "${work}/build.log" >&2
  exit 1
}
# Only the two programs: `make install` would also link redis-server and redis-cli to
# them, in front of the Redis the other tests run.
install -d "${PREFIX}/bin"
install -m 0755 "${work}/valkey-${VERSION}/src/valkey-server" "${work}/valkey-${VERSION}/src/valkey-cli" "${PREFIX}/bin/"
echo "valkey: installed $("${PREFIX}/bin/valkey-server" --version) in $((SECONDS - started)) s"
