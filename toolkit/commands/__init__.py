"""Click commands, one module per area; each exports ``COMMANDS``.

Bodies import the library lazily so ``iteralab --help`` imports neither
pandas nor torch.
"""
