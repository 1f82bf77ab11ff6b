#!/bin/sh
# Vendors axe-core from its npm package (the browser tests' accessibility check; never served by
# the app): `npm pack` the pinned version, check the file's sha256, copy it and its licences here.
# Usage: tests/browser/vendor/vendor-axe.sh   (needs npm and network access to the npm registry)
set -eu
VERSION=4.14.1
SHA256=29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm pack --silent "axe-core@$VERSION" >/dev/null
tar xzf "axe-core-$VERSION.tgz"
echo "$SHA256  package/axe.min.js" | sha256sum -c -
cp package/axe.min.js "$HERE/axe-$VERSION.min.js"
cp package/LICENSE "$HERE/axe-core-LICENSE.txt"
cp package/LICENSE-3RD-PARTY.txt "$HERE/axe-core-LICENSE-3RD-PARTY.txt"
echo "vendored axe-core $VERSION into $HERE"
