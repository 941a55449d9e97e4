#!/usr/bin/env bash
# Nsight Compute's memory-side view of one solution's kernels at one case: DRAM bytes read and
# written against the minimum, L2 and L1 sectors per request (coalescing, misalignment), and the
# warp stall reasons. For issue 17's misses (why a reference is below the copy bandwidth).
#   bash benchmarks/ncu_memory.sh NAME SPEC SUBMISSION TOKEN      (writes $OUT/NAME.ncu.csv)
#   bash benchmarks/ncu_memory.sh ex03_ragged exercises/ex03_transpose/spec.toml solutions/ex03_transpose \
#        "rows=8191,cols=12289/x=0/seed=1"
# TOKEN is a case token as grader.sanitize_run takes it (dims / value kinds / seed).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "ncu not found"; exit 1; }
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_write.sum"
M="$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
M="$M,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size"
for r in long_scoreboard lg_throttle barrier membar mio_throttle short_scoreboard wait drain; do
  M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
t0=$SECONDS
"$NCU" --csv --page raw --print-units base --profile-from-start off --target-processes all --metrics "$M" \
  --log-file "$OUT/$1.ncu.csv" python3 -P -m grader.sanitize_run "$2" "$3" "$4" --status "$OUT/$1.status.json" \
  --profiled 1 > "$OUT/$1.stdout" 2>&1
echo "$1: rc=$? $((SECONDS - t0)) s; status $(cat "$OUT/$1.status.json" 2>/dev/null)"
python3 - "$OUT/$1.ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if len(rows) < 3:
    print("no kernel rows"); sys.exit()
head = rows[0]
for r in rows[2:]:
    d = dict(zip(head, r))
    print(d.get("Kernel Name", "?"))
    for k in head:
        if "__" in k:
            print(f"  {k} = {d[k]}")
PY
