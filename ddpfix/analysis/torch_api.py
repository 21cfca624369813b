"""What a `DistributedDataParallel` wrapper answers itself: the public names of `nn.Module` (its
methods and the attributes every module instance has) and those `DistributedDataParallel` adds (its
methods, the attributes its constructor sets, and `module`). Any other attribute read through the
wrapper raises `AttributeError: 'DistributedDataParallel' object has no attribute ...`: it belongs to
the wrapped model. Written out from torch 2.13.0; tests/test_torch_api.py compares them with the
installed torch, so a torch that adds or drops a name fails that test instead of drifting silently."""

from __future__ import annotations

MODULE_API = frozenset(
    {
        "T_destination",
        "add_module",
        "apply",
        "bfloat16",
        "buffers",
        "call_super_init",
        "children",
        "compile",
        "cpu",
        "cuda",
        "double",
        "dump_patches",
        "eval",
        "extra_repr",
        "float",
        "forward",
        "get_buffer",
        "get_extra_state",
        "get_parameter",
        "get_submodule",
        "half",
        "ipu",
        "load_state_dict",
        "modules",
        "mtia",
        "named_buffers",
        "named_children",
        "named_modules",
        "named_parameters",
        "parameters",
        "register_backward_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_load_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_module",
        "register_parameter",
        "register_state_dict_post_hook",
        "register_state_dict_pre_hook",
        "requires_grad_",
        "set_extra_state",
        "set_submodule",
        "share_memory",
        "state_dict",
        "to",
        "to_empty",
        "train",
        "training",
        "type",
        "xpu",
        "zero_grad",
    }
)

DDP_API = frozenset(
    {
        "batched_grad_copy",
        "broadcast_bucket_size",
        "broadcast_buffers",
        "bucket_bytes_cap",
        "bucket_bytes_cap_default",
        "bucket_bytes_cap_list",
        "device",
        "device_ids",
        "device_type",
        "dim",
        "find_unused_parameters",
        "forward_sync_buffers",
        "gather",
        "gradient_as_bucket_view",
        "is_multi_device_module",
        "join",
        "join_device",
        "join_hook",
        "join_process_group",
        "logger",
        "mixed_precision",
        "module",
        "modules_buffers",
        "named_module_buffers",
        "no_sync",
        "output_device",
        "parameters_to_ignore",
        "process_group",
        "reducer",
        "register_comm_hook",
        "require_backward_grad_sync",
        "require_forward_param_sync",
        "scatter",
        "skip_all_reduce_unused_params",
        "static_graph",
        "to_kwargs",
        "use_side_stream_for_tensor_copies",
        "will_sync_module_buffers",
    }
)

WRAPPER_API = MODULE_API | DDP_API

# the collectives of torch.distributed: every rank of the group has to call them
COLLECTIVES = frozenset(
    {
        "barrier",
        "monitored_barrier",
        "all_reduce",
        "reduce",
        "broadcast",
        "all_gather",
        "all_gather_into_tensor",
        "gather",
        "scatter",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all",
        "all_to_all_single",
        "all_gather_object",
        "broadcast_object_list",
        "gather_object",
        "scatter_object_list",
    }
)

# Calls that read the environment or the hardware and change nothing: a statement that makes only these
# may move above init_process_group (DDP006), a test made of them may be dropped (DDP302).
READ_ONLY_CALLS = frozenset(
    {
        "int",
        "str",
        "float",
        "bool",
        "len",
        "min",
        "max",
        "getattr",
        "os.environ.get",
        "os.getenv",
        "torch.device",
        "torch.cuda.is_available",
        "torch.cuda.device_count",
    }
)

__all__ = ["COLLECTIVES", "DDP_API", "MODULE_API", "READ_ONLY_CALLS", "WRAPPER_API"]
