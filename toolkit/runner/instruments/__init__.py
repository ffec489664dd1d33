"""What an attempt measures with and records about where it ran.

- ``probes``: host and CUDA timers (spans, forward spans), memory peaks and release, the
  attention kernel seen;
- ``peak``: the matrix-product peak and copy bandwidth probe (the Manifest's peak);
- ``flops``, ``achieved``: the FLOP count of a model and the rates and utilisation it reached;
- ``environment``, ``rocm_stack``: what is really installed (OS, CPU, torch build, GPU, driver);
- ``precision``, ``compilation``, ``reproducibility``: fp32 pinned to full precision,
  torch.compile per attempt, the Protocol's determinism and seeds;
- ``faults``: the documented fault-injection hook used by tests and drills.
"""
