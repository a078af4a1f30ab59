"""pipeweave: pipeline-parallel training schedules, compiled, checked and run.

The compiler and its checks come with the native extension (`pipeweave._native`), built from the
Rust workspace with maturin.
The pure-Python parts need no extension:
`pipeweave.torch` runs a plan in `torch.distributed` (it needs torch, nothing else here does),
and `pipeweave.torch.JsonPlan` reads the JSON plan `pipeweave export --to json` writes.
"""

__all__: list[str] = []
