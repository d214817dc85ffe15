#!/usr/bin/env bash
# A throwaway single-node SLURM cluster with accounting, for the tests and for trying `--backend slurm`.
#
#   scripts/slurm-test-cluster.sh start    # idempotent; prints the line to export
#   scripts/slurm-test-cluster.sh status   # exit 0 when every daemon answers
#   scripts/slurm-test-cluster.sh stop     # stops every daemon it started and removes its folder
#
# As root (Debian: slurm-wlm munge slurmdbd mariadb-server). Every file lives under
# $SWEEP_SLURM_DIR (default /var/tmp/sweep-slurm): config, munge key, spools, logs, the MariaDB data.
# Nothing goes to /etc: clients find the cluster through SLURM_CONF=$SWEEP_SLURM_DIR/slurm.conf. The
# one exception is munge's socket: SLURM 22.05's accounting client only talks to the default
# /run/munge/munge.socket.2, so munged listens there (or the munged already there is used).
# Accounting (slurmdbd on MariaDB) is not optional: without it submitit cannot see that a job died.
# Non-default ports, so a real SLURM on the machine is left alone.
# Short scheduler cycles for tests that wait on job states: the main loop every 2 s and backfill every 1 s (SLURM's
# defaults, 60 s and 30 s, start a requeued or freed job up to a minute late), and a requeued job eligible again
# after 30 s (cred_expire, SLURM's requeue delay; default 120 s).
set -euo pipefail
dir=${SWEEP_SLURM_DIR:-/var/tmp/sweep-slurm}
cluster=sweeptest
ctld_port=${SWEEP_SLURM_PORT:-16817}
slurmd_port=$((ctld_port + 1)) dbd_port=$((ctld_port + 2)) db_port=$((ctld_port + 3))
export SLURM_CONF=$dir/slurm.conf

need() { command -v "$1" >/dev/null || { echo "slurm-test-cluster: $1 is missing (apt-get install -y slurm-wlm munge slurmdbd mariadb-server)" >&2; exit 1; }; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() { # wait_for SECONDS WHAT COMMAND...
  local until=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $until ] || { echo "slurm-test-cluster: timed out waiting for $what (logs in $dir/log)" >&2; tail -n 5 "$dir"/log/*.log >&2; return 1; }
    sleep 0.2
  done
}
db() { mysql --no-defaults -S "$dir/mysql.sock" -u root "$@"; }

write_config() {
  local node cpus mem
  node=$(hostname -s)
  cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc reports OMP_NUM_THREADS when it is set
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  mkdir -p "$dir"/{log,ctld,spool,munge,db} && chmod 700 "$dir/munge"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=$cluster
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=defer_batch=0,sched_interval=2,bf_interval=1
AuthInfo=cred_expire=30
SlurmctldParameters=preempt_send_user_signal
KillWait=5
MinJobAge=300
JobRequeue=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
JobAcctGatherType=jobacct_gather/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  cat >"$dir/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
CONF
  chmod 600 "$dir/slurmdbd.conf"
  [ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge/munge.key"; }
}

start() {
  [ "$(id -u)" -eq 0 ] || { echo "slurm-test-cluster: run as root" >&2; exit 1; }
  for cmd in munged slurmctld slurmd slurmdbd mariadbd mariadb-install-db mysql sacctmgr; do need "$cmd"; done
  [ -f "$dir/slurm.conf" ] || write_config
  if ! pid_alive "$dir/munge/munged.pid" && ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge  # (a munged that already answers there, e.g. the system's, is used as it is)
    munged --force --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
  fi
  if ! pid_alive "$dir/db/mariadb.pid"; then
    [ -d "$dir/db/data/mysql" ] || mariadb-install-db --no-defaults --user=root --datadir="$dir/db/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/log/mariadb-install.log" 2>&1
    mariadbd --no-defaults --user=root --datadir="$dir/db/data" --socket="$dir/mysql.sock" --port=$db_port \
      --bind-address=127.0.0.1 --pid-file="$dir/db/mariadb.pid" --log-error="$dir/log/mariadb.log" \
      --innodb-buffer-pool-size=32M --skip-name-resolve >/dev/null 2>&1 &
    wait_for 60 MariaDB db -e "SELECT 1" || exit 1
    db -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL ON *.* TO 'root'@'127.0.0.1'"
  fi
  if ! pid_alive "$dir/slurmdbd.pid"; then
    slurmdbd  # reads slurmdbd.conf next to $SLURM_CONF
    wait_for 60 slurmdbd sacctmgr -n list cluster || exit 1
  fi
  sacctmgr -n list cluster format=cluster | grep -qw $cluster || sacctmgr -i add cluster $cluster >/dev/null
  pid_alive "$dir/slurmctld.pid" || slurmctld -f "$SLURM_CONF"
  pid_alive "$dir/slurmd.pid" || slurmd -f "$SLURM_CONF"
  wait_for 60 "the node" sh -c "sinfo -h -o %t | grep -qE '^(idle|mix|alloc)'" || exit 1
  echo "slurm test cluster up: export SLURM_CONF=$SLURM_CONF"
}

stop() {
  local pidfile pid
  if pid_alive "$dir/slurmctld.pid"; then # cancel the jobs first: their steps are not slurmd's children
    scancel --cluster=$cluster --full --user="$(id -un)" 2>/dev/null || true
    wait_for 30 "the jobs to end" sh -c '[ -z "$(squeue -h -o %i)" ]' || true
  fi
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/slurmdbd.pid" "$dir/db/mariadb.pid" "$dir/munge/munged.pid"; do
    pid_alive "$pidfile" || continue
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pid" 2>/dev/null || kill -9 "$pid"
  done
  [ ! -f "$dir/munge/munged.pid" ] || rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  rm -rf "$dir"
  echo "slurm test cluster stopped"
}

status() {
  local ok=0 name
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then echo "munged: answering"; else echo "munged: stopped"; ok=1; fi
  for name in db/mariadb slurmdbd slurmctld slurmd; do
    if pid_alive "$dir/$name.pid"; then echo "$(basename $name): running (pid $(cat "$dir/$name.pid"))"; else echo "$(basename $name): stopped"; ok=1; fi
  done
  [ $ok -eq 0 ] && sinfo -h -o "partition %P, node %N: %t" && echo "export SLURM_CONF=$SLURM_CONF"
  return $ok
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
