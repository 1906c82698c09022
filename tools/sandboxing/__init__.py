"""The sandbox: a fresh process per job (the parent's side runs in the agent's process, the
job's side in the job), its limits, the CPU's and GPUs' slots, isolation, the preloads."""
