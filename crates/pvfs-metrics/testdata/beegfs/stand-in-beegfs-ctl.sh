#!/bin/bash
# A stand-in for BeeGFS 7's `beegfs-ctl --serverstats --nodetype=storage --interval=1
# --history=3 3` (one storage server, ID 3), printed as ModeIOStat prints a single server's
# history (ThinkParQ/beegfs 7.4.7, ctl/source/modes/ModeIOStat.cpp): `%11s ` time_index, then
# storage's `%9s %9s %6s %6s %3s`, a row a second, a blank line after each round, every second
# until its standard input is readable or closed (ModeIOStat's waitForInput). Other arguments
# exit 64. The tests of pvfs-agent's `beegfs` and the CLI's BeeGFS test run it.
[ "$*" = "--serverstats --nodetype=storage --interval=1 --history=3 3" ] || exit 64
while :; do
  now=$(date +%s)
  printf '%11s %9s %9s %6s %6s %3s\n' time_index write_KiB read_KiB reqs qlen bsy
  for t in $((now-2)) $((now-1)) $now; do printf '%11s %9s %9s %6s %6s %3s\n' $t 102400 4 880 3 12; done
  echo
  read -t 1 -n 1 _; [ $? -gt 128 ] || exit 0
done
