#!/usr/bin/env bash
# A short GPU smoke test (about 4 minutes) to run before the consolidated job (gpu_all.sh):
#     bash benchmarks/quick_gpu_check.sh
# Verifies one good and a few broken kernels through the CLI, the whole example set through
# tools/, and profiles one kernel. Output goes to $OUT/quick.txt and the JSON files beside it.
set -u
source "$(dirname "$0")/_gpu_env.sh"
{
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
python3 -c "import agent.graph, langgraph; print('agent imports ok')"
for k in kernels/relu broken/relu__mismatch broken/relu__crash broken/matmul__policy; do
  s=$(date +%s.%N); prob=$(basename $k .py); prob=${prob%%__*}
  timeout 60 python3 -m agent verify examples/problems/$prob.py examples/$k.py --trials 2 --device cuda
  echo "rc=$? $k $(python3 -c "print(round($(date +%s.%N)-$s,1))") s"
done
timeout 150 python3 benchmarks/verify_examples.py --device cuda --trials 3 --timeout 20 --jobs-per-gpu 4 \
  --out "$OUT/verify_examples.json"
timeout 90 python3 -m agent profile examples/problems/softmax.py examples/kernels/softmax.py --json
echo "profile rc=$?"
} 2>&1 | tee "$OUT/quick.txt"
