#!/usr/bin/env bash
# Nsight Compute on the device, for grade --profile's parser (grader/profiling.py): its version, the
# metric names it knows on this GPU, and the raw CSV of two profiled solve calls. Writes to $OUT.
#   bash benchmarks/ncu_probe.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-not found}"; [ -n "$NCU" ] || exit 1
"$NCU" --version | tail -2
"$NCU" --query-metrics --csv > "$OUT/query_metrics.csv" 2>&1; wc -l "$OUT/query_metrics.csv"
STALLS=""
for r in long_scoreboard short_scoreboard barrier membar mio_throttle lg_throttle math_pipe_throttle wait not_selected selected no_instruction dispatch_stall drain imc_miss branch_resolving tex_throttle sleeping misc; do
  STALLS="$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_active_per_issue_active.ratio$STALLS"
for m in ${M//,/ }; do grep -q "^\"${m%%.*}\"" "$OUT/query_metrics.csv" || echo "base metric not listed: ${m%%.*}"; done
run() {  # name spec submission token
  local t0=$SECONDS
  "$NCU" --csv --page raw --print-units base --profile-from-start off --target-processes all --metrics "$M" \
    --log-file "$OUT/$1.ncu.log" python3 -P -m grader.sanitize_run "$2" "$3" "$4" --status "$OUT/$1.status.json" --profiled 1 \
    > "$OUT/$1.stdout" 2>&1
  echo "$1: rc=$? $((SECONDS - t0)) s; status $(cat "$OUT/$1.status.json")"; head -c 600 "$OUT/$1.ncu.log"; echo
}
run ex07_solution exercises/ex07_softmax/spec.toml solutions/ex07_softmax "rows=4096,cols=4096/x=0/seed=1"
run ex08_naive exercises/ex08_layernorm/spec.toml tests/fixtures/gpu/ex08_layernorm_naive "rows=16384,cols=4096/x=0,gamma=0,beta=0,eps=0/seed=1"
run ex08_solution exercises/ex08_layernorm/spec.toml solutions/ex08_layernorm "rows=16384,cols=4096/x=0,gamma=0,beta=0,eps=0/seed=1"
run ex12_solution exercises/ex12_gemm_tensorcore/spec.toml solutions/ex12_gemm_tensorcore "M=4096,N=4096,K=4096,T=float16/a=0,b=0/seed=1"
"$NCU" --list-sections > "$OUT/sections.txt" 2>&1
