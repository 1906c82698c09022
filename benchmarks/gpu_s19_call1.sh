#!/usr/bin/env bash
# Session 19, device call 1 (one H200, about 9.5 minutes): issue 33, all 36 KernelBench level-3
# networks (../shared/kernelbench/level3, carried as .kb/kb/level3) through
# benchmarks/gpu_level3_time.sh ALONE on the GPU (8 jobs, `--timeout 300 --no-tune`), after a
# network's speed choices share one 60 s clock at draft time (tools/draft/choice_clock.py) and
# with the bench's cache (drafts, baselines) packed with the level so a later call resumes it:
#
#   run(command="echo <commit> > COMMIT && bash benchmarks/gpu_s19_call1.sh",
#       carry=[".whl", ".kb"], kind="nvidia-h200", timeout_s=600)
#   resume (call 2): mkdir -p .kb/resume && cp <files_at>/bench_level3.tgz .kb/resume/, then
#   RESUME_TGZ=.kb/resume/bench_level3.tgz bash benchmarks/gpu_s19_call1.sh
#
# $OUT: level3_time.md, bench_level3.tgz, report_level3.md, summary.md, log.txt, env.txt.
set -u
export NETS=${NETS:-$(ls .kb/kb/level3 | sed -n 's/\.py$//p' | tr '\n' ' ')}
[ -f COMMIT ] && echo "commit $(cat COMMIT)"
DEADLINE_S=${DEADLINE_S:-555} bash "$(dirname "$0")/gpu_level3_time.sh"
