#!/usr/bin/env bash
# Install what the tests start for real, when it is missing (Debian; needs root): PostgreSQL for
# the storage tests; SLURM, munge, slurmdbd and MariaDB for the SLURM backend's test cluster
# (scripts/slurm-test-cluster.sh, started and stopped by the tests); Chromium, headless, for the
# HTML plots page. Nothing runs after.
# Where it cannot be installed the tests that need it skip, except in CI (CI set), where that fails.
set -euo pipefail
have_postgres() { command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }
have_slurm() { command -v slurmctld && command -v slurmd && command -v slurmdbd && command -v munged && command -v mariadbd; } >/dev/null 2>&1
packages=()
have_postgres || packages+=(postgresql)
have_slurm || packages+=(slurm-wlm munge slurmdbd mariadb-server)
command -v chromium >/dev/null || packages+=(chromium)
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "test-services: ${packages[*]} missing and cannot be installed here (as root: apt-get install ${packages[*]}); their tests will skip" >&2
    [ -z "${CI:-}" ] || exit 1
    exit 0
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
echo "test services ready: $(compgen -G '/usr/lib/postgresql/*/bin/initdb' | tail -1 || command -v initdb), $(slurmctld -V)"
