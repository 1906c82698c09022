#!/usr/bin/env bash
# Records, on a two-GPU machine (nvidia-h200-x2) in under 9 minutes, what issues 4, 7 and 8 ask
# of the current code (the profiling table for issue 5 is `gpu_timing.sh`'s GPU 0 half):
#   1. in parallel: the compiler drafter + tuner over all nine examples (five on GPU 0, four on
#      GPU 1, speedups over eager and torch.compile before and after tuning, every tuner trial),
#      and the adversarial corpus on GPU 1 (CUDA faults included);
#   2. then the throughput benchmark with both GPUs visible: the runner (4 verification jobs per
#      GPU, one exclusive timing job per GPU) vs one subprocess per candidate, sequential and
#      spread over both GPUs.
#     bash benchmarks/gpu_record.sh
# Writes compiler_examples_gpu{0,1}.json, adversarial.txt, throughput_h200x2.md/json and logs to $OUT.
set -u
source "$(dirname "$0")/_gpu_env.sh"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), 'GPUs')"
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 230 python3 benchmarks/compiler_examples.py --problems examples/problems/{relu,softmax,layernorm,matmul,linear_gelu}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples_gpu0.json" 2>&1 | grep -v Warning
) > "$OUT/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  ADV_JOBS_PER_GPU=4 timeout 120 python3 benchmarks/adversarial_figures.py --device cuda --timeout 20 --trials 3 --no-write --json \
     > "$OUT/adversarial.txt" 2>&1
  tail -c 600 "$OUT/adversarial.txt"; echo
  timeout 150 python3 benchmarks/compiler_examples.py --problems examples/problems/{mse_loss,multi_io,scale_add_bias,sum_reduction}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples_gpu1.json" 2>&1 | grep -v Warning
) > "$OUT/gpu1.log" 2>&1 &
wait
cat "$OUT/gpu0.log" "$OUT/gpu1.log"
export CUDA_VISIBLE_DEVICES=0,1
timeout 290 python3 benchmarks/throughput.py --n 24 --timeout 20 --jobs-per-gpu 4 \
  --record throughput_h200x2.md --json 2>&1 | grep -v Warning | tee "$OUT/throughput.log" | tail -25
cp throughput_h200x2.md "$OUT/"
