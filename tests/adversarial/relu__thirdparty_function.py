"""expected: ok
Honest: calls a library's autograd Function whose @triton.jit kernel is defined in another
package (tests/adversarial/_vendor, a stand-in for Liger-Kernel). The candidate defines no kernel
of its own; the runtime audit sees the real launches.
"""

import torch.nn as nn

from tests.adversarial._vendor.relu_lib import ReLUFunction


class ModelNew(nn.Module):
    def forward(self, x):
        return ReLUFunction.apply(x)
