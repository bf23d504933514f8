"""TrainKernel: compile a whole static PyTorch training step into one CUDA megakernel."""

__version__ = "0.2.0.dev0"


def __getattr__(name: str):
    # Lazy: `import trainkernel` stays cheap (no torch/xdsl import) for the CLI.
    if name in ("capture", "Captured"):
        from trainkernel.frontend import capture as _capture

        return getattr(_capture, name)
    if name == "interpret":
        from trainkernel.interpreter import interpret

        return interpret
    if name in ("compile_training", "CompiledTrainingStep"):
        from trainkernel import api

        return getattr(api, name)
    if name in ("compile_module", "ModuleStep", "ModuleError"):
        from trainkernel import module

        return getattr(module, name)
    if name in ("UnsupportedOpError", "CaptureError"):
        from trainkernel.frontend import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'trainkernel' has no attribute {name!r}")
