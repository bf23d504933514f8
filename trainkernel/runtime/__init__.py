"""Runtime: load a built megakernel and launch it on torch's current CUDA stream.

See `trainkernel.runtime.launcher` for the ABI; `trainkernel.api` builds the
user-facing `CompiledTrainingStep` on top of it.
"""

from trainkernel.runtime.launcher import CudaError, KernelLibrary, cuda_error_name, load_library

__all__ = ["CudaError", "KernelLibrary", "cuda_error_name", "load_library"]
