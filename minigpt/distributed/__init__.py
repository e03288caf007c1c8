"""Beyond one process (Part IV): workers started by `torch.multiprocessing` on a `torch.distributed`
process group (gloo on CPU, NCCL on GPUs, the same code). `launch` starts and always cleans up;
`disagg` serves with prefill and decode on different workers (Chapter 19; its parts `disagg_wire`,
`disagg_records`, `disagg_engines`, `disagg_senders`, `disagg_workers`, `disagg_driver`), `kv_transfer` moves a
request's K/V between their paged pools, `serve` is the command line."""
