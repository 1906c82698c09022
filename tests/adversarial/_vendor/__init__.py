"""A stand-in for a third-party kernel library (like Liger-Kernel) for the adversarial corpus:
its @triton.jit kernels live here, not in the candidate that calls them."""
