#!/usr/bin/env bash
# Starts a single-node Slurm cluster on this machine for gatepipe's Slurm
# integration test: installs Debian's slurm-wlm and munge when missing,
# writes a minimal slurm.conf for localhost, starts munged, slurmctld and
# slurmd, and waits until the node accepts jobs. Needs root.
#   scripts/slurm-localhost.sh start | stop | status
set -euo pipefail

conf=/etc/slurm/slurm.conf
log=/var/log/slurm

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "slurm-localhost: needs root (it installs packages and starts daemons)" >&2
		exit 2
	fi
}

install() {
	if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
		sh "$(dirname "$0")/apt-install.sh" slurm-wlm munge >/dev/null
	fi
}

write_conf() {
	local cpus mem
	cpus=$(nproc)
	mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
	mkdir -p /etc/slurm /var/spool/slurmd /var/spool/slurmctld "$log"
	cat > "$conf" <<CONF
ClusterName=gatepipe
SlurmctldHost=localhost
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=3600
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
	# Processes are tracked without cgroups (containers rarely allow them).
	rm -f /etc/slurm/cgroup.conf
}

start() {
	need_root
	install
	write_conf
	if [ ! -s /etc/munge/munge.key ]; then
		mkdir -p /etc/munge
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
	fi
	chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge 2>/dev/null || true
	mkdir -p /run/munge && chown munge:munge /run/munge
	chmod 0400 /etc/munge/munge.key
	pgrep -x munged >/dev/null || su -s /bin/sh munge -c "/usr/sbin/munged --force"
	pgrep -x slurmctld >/dev/null || slurmctld
	pgrep -x slurmd >/dev/null || slurmd
	for i in $(seq 1 60); do
		if sinfo -h -o "%t" 2>/dev/null | grep -qE "idle|mix|alloc"; then
			echo "slurm-localhost: ready ($(sinfo -h -o '%D node, %c CPUs'))"
			return 0
		fi
		scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
		sleep 1
	done
	echo "slurm-localhost: the node did not become ready; see $log" >&2
	sinfo >&2 || true
	tail -5 "$log/slurmctld.log" "$log/slurmd.log" >&2 || true
	return 1
}

stop() {
	pkill -x slurmd || true
	pkill -x slurmctld || true
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) sinfo ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
