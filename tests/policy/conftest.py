"""The policy tests run torch on one thread (two threads on two cores were measured 5 to 20 times slower)."""

import torch

torch.set_num_threads(1)
