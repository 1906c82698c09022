"""expected: cheat
Imports a "library" whose op is plain PyTorch and defines no kernel: the static check lets a
candidate importing another package through (it may launch that package's kernels), and the
runtime audit refuses it (PyTorch compute, no Triton launch).
"""

import torch.nn as nn

from tests.adversarial._vendor.relu_lib import relu_in_torch


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_in_torch(x)
