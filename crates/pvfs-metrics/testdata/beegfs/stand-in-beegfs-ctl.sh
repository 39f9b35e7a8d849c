#!/bin/bash
# A stand-in for BeeGFS 7's `beegfs-ctl --serverstats --nodetype=storage --interval=1
# --history=3 3` (one storage server, ID 3), printed as ModeIOStat prints a single server's
# history (ThinkParQ/beegfs 7.4.7, ctl/source/modes/ModeIOStat.cpp): `%11s ` time_index, then
# storage's `%9s %9s %6s %6s %3s`, a row a second, a blank line after each round, every second
# until its standard input is readable or closed (ModeIOStat's waitForInput). And for
# `beegfs-ctl --listtargets --nodetype=storage --state`, two targets as ModeListTargets prints
# them (7.4.7's printHeader: `%8s ` TargetID, `%16s %12s ` Reachability and Consistency, `%8s `
# NodeID, the line's last space made its newline; printTarget: `%8hu `, the states as
# TargetStateStore::stateToStr says them): target 101 of server 3, Online and Good, and target
# 102 of server 4, Offline and Needs-resync. Other arguments exit 64. The tests of pvfs-agent's
# `beegfs` and the CLI's BeeGFS test run it.
if [ "$*" = "--listtargets --nodetype=storage --state" ]; then
  printf '%8s %16s %12s %8s\n' TargetID Reachability Consistency NodeID
  printf '%8s %16s %12s %8s\n' ======== ============ =========== ======
  printf '%8s %16s %12s %8s\n' 101 Online Good 3
  printf '%8s %16s %12s %8s\n' 102 Offline Needs-resync 4
  exit 0
fi
[ "$*" = "--serverstats --nodetype=storage --interval=1 --history=3 3" ] || exit 64
while :; do
  now=$(date +%s)
  printf '%11s %9s %9s %6s %6s %3s\n' time_index write_KiB read_KiB reqs qlen bsy
  for t in $((now-2)) $((now-1)) $now; do printf '%11s %9s %9s %6s %6s %3s\n' $t 102400 4 880 3 12; done
  echo
  read -t 1 -n 1 _; [ $? -gt 128 ] || exit 0
done
