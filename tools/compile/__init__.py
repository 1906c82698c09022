"""Compilation: ahead of time for a real CUDA target (in the job that recorded the launches),
targets, interpreter-to-JIT bridge, errors mapped to candidate lines, tuning variants."""
