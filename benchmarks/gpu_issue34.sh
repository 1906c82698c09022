#!/usr/bin/env bash
# Issue 34's last three causes on the GPU, about 3 minutes on one H200 (each part cut at $CAP_S s,
# default 150; both at once):
#   1. the CUDA paths in-process and the judgement: tests/test_compute_block.py (library GEMMs
#      refused at the CUDA key, `redispatch` included) and tests/test_verify_issue34_causes.py;
#      test_verify.py's allow-library test (a mixed kernel still `ok` and "mixed" under the
#      lenient policy: the job repeats the forward whose library call was refused);
#   2. the six issue-34 kinds and every honest kind of the corpus verified on CUDA (the launch
#      trace is recorded on the GPU now too; autotune's benchmark launches left out of it):
#      every kind must get its `expected:` status.
# Run from the repo root with the wheels in .whl/ (docs/gpu-runbook.md):
#
#   run(command="bash benchmarks/gpu_issue34.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=240)
#
# $OUT gets issue34.txt (the log) and issue34_corpus.json (one object a kind).
set -u
START=$SECONDS
CAP_S=${CAP_S:-150}
source "$(dirname "$0")/_gpu_env.sh"
LOG=$OUT/issue34.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,memory.total --format=csv >>"$LOG" 2>&1

log "tests (in-process block, judgement, allow-library) and the corpus kinds, at once"
timeout $CAP_S python3 -m pytest -q -n 0 tests/test_compute_block.py tests/test_verify_issue34_causes.py \
  "tests/test_verify.py::test_library_calls_accepted_as_mixed_under_allow_library" >/tmp/i34_tests.log 2>&1 &
TESTS=$!
ADV_JOBS_PER_GPU=${ADV_JOBS_PER_GPU:-4} timeout $CAP_S python3 - >"$OUT/issue34_corpus.json" 2>/tmp/i34_corpus.log <<'PY'
import json
from dataclasses import asdict
from benchmarks.adversarial_figures import load_corpus, run_corpus
ISSUE34 = ("memo_by_fingerprint", "memo_skip_flag", "correct_for_seven_calls",
           "correct_for_four_input_sets", "mm_redispatch_below_python", "addmm_hidden_with_fallback")
cases = [c for c in load_corpus() if "ok" in c.expected or c.kind in ISSUE34]
outcomes, dev = run_corpus(cases, device="cuda", timeout_s=60, trials=3)
print(json.dumps({"device": dev, "kinds": len(outcomes),
                  "wrong": [o.name for o in outcomes if not o.as_expected],
                  "false_accepts": [o.name for o in outcomes if o.false_accept],
                  "cases": [asdict(o) for o in outcomes]}))
PY
ADV_RC=$?
wait $TESTS; TESTS_RC=$?
log "tests rc=$TESTS_RC: $(tail -1 /tmp/i34_tests.log)"
[ $TESTS_RC -ne 0 ] && tail -40 /tmp/i34_tests.log >>"$LOG"
log "corpus rc=$ADV_RC: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["kinds"], "kinds, wrong:", d["wrong"], "false accepts:", d["false_accepts"])' "$OUT/issue34_corpus.json" 2>&1)"
grep -E "^(FAIL|ok )" /tmp/i34_corpus.log >>"$LOG" 2>/dev/null
[ $ADV_RC -ne 0 ] && tail -30 /tmp/i34_corpus.log >>"$LOG"
log "done"
