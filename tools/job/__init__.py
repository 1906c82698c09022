"""Code that runs inside a sandboxed job process, never in the agent's: the job functions (the
problem's, the candidate's, the judges', the timing job) and what they set up around them."""
