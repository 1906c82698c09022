set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())"
timeout 60 python3 -m agent verify examples/problems/relu.py examples/kernels/relu.py --trials 2
timeout 60 python3 -m agent verify examples/problems/relu.py examples/broken/relu__mismatch.py --trials 2
timeout 60 python3 -m agent verify examples/problems/relu.py examples/broken/relu__crash.py --trials 2
timeout 90 python3 -m agent profile examples/problems/softmax.py examples/kernels/softmax.py --json
