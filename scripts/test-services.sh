#!/usr/bin/env bash
# Install what the tests start for real, when it is missing (Debian; needs root): PostgreSQL for
# the storage tests. Each test starts and stops its own server on loopback; nothing runs after.
# Where it cannot be installed the tests that need it skip, except in CI (CI set), where that fails.
set -euo pipefail
have_postgres() { command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }
if ! have_postgres; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "test-services: PostgreSQL is missing and cannot be installed here (as root: apt-get install postgresql); its tests will skip" >&2
    [ -z "${CI:-}" ] || exit 1
    exit 0
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
echo "test services ready: $(compgen -G '/usr/lib/postgresql/*/bin/initdb' | tail -1 || command -v initdb)"
