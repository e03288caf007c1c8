"""Beyond one process (Part IV): workers started by `torch.multiprocessing` on a `torch.distributed`
process group (gloo on CPU, NCCL on GPUs, the same code). `launch` starts and always cleans up."""
