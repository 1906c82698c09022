"""The contracts every wing shares, in every process: Problem, Verdict and the results, one
exception hierarchy, a problem's precision, the per-machine cache, the locked ast.parse."""
