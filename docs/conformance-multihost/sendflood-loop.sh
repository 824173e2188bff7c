#!/bin/bash
B=$(ls -d ~/.cache/ompi-scale/mpich-tests/mpich-*/pt2pt)
CP=/work/main/build/ompi/mca/pml/mdq/.libs:/work/main/build/ompi/mca/osc/nbe/.libs:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cd $B
for i in $(seq 1 ${N:-10}); do
  s=$(date +%s)
  timeout 90 $MULTIHOST_MPIRUN --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 $MULTIHOST_MPIRUN_ARGS -np 8 --mca pml mdq --mca mca_base_component_path $CP ./sendflood < /dev/null > /tmp/mh/sf.$i.log 2>&1 &
  p=$!
  grabbed=0
  while kill -0 $p 2>/dev/null; do
    sleep 2
    if [ $grabbed = 0 ] && [ $(( $(date +%s) - s )) -ge 30 ]; then
      grabbed=1
      for q in $(pgrep -f "^./sendflood"); do
        echo "=== pid $q" ; timeout 30 gdb -p $q -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E "^#|^Thread" | grep -vE "epoll|__poll|event_base|libevent|libpmix|clone|start_thread"
      done > /tmp/mh/sf-stacks.$i.txt
    fi
  done
  wait $p; echo "$i rc=$? $(( $(date +%s) - s ))s grabbed=$grabbed"
done
