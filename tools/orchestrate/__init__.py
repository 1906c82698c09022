"""Orchestration of a verification or a profile, in the agent's process: it plans the trials,
sends the jobs to the sandbox and turns their findings into a verdict, timings, feedback."""
