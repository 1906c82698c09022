"""The checks: comparison, audit, integrity, stochastic statistics, precision and timing rules.
Called inside the jobs and by the orchestration on what the jobs found; they start no job."""
