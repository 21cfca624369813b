"""The texts `ddpfix explain` knows: PyTorch's own error messages and the words users paste around
them, each with the rules most likely behind it."""

from __future__ import annotations

# Forum wording: a line that says something hangs and where. Lowercase stems; the patterns are
# matched without regard to case. The hang words include a few languages, since users paste the
# PyTorch names (barrier, init_process_group) inside their own sentences.
_HANG = (
    r"(?:(?<![a-z])hang|(?<![a-z])hung(?![a-z])|stuck|freez|froze|deadlock|never (?:returns|finishes|ends|completes)"
    r"|(?:waits?|waiting|blocks?|blocked) forever|卡住|卡死|卡在|卡着|挂起|死锁|阻塞|завис|висит|застр"
    r"|ハング|フリーズ|止ま|固ま|멈|häng|bloqu|se cuelga|colgad|trava|congela)"
)
_HANG_GATE = (  # a superset of _HANG made of plain words, much faster to look for
    r"hang|hung|stuck|freez|froze|deadlock|forever|never|卡|挂起|死锁|阻塞|завис|висит|застр|ハング|フリーズ|止ま|固ま|멈"
    r"|häng|bloqu|cuelga|colgad|trava|congela"
)
_INIT = r"(?:init_process_group|rendezvous|rdzv|tcpstore|master_addr|master_port)"
_END = (
    r"(?:end of (?:the )?(?:training|(?:first |last |final )?epoch)|(?:last|final) (?:epoch|batch|iteration|step)"
    r"|after (?:the )?training|(?:on|at|before) exit|when exiting|destroy_process_group)"
)
_EVAL = r"(?:validat|evaluat|(?<![a-z])eval(?![a-z])|(?<![a-z])inference)"
_COLLECTIVE = (
    r"(?:barrier|all_?reduce|all_?gather|broadcast|reduce_scatter|collective|nccl|gloo|ddp|distributed"
    r"|multi[- ]?gpu|torchrun|backward)"
)
_GPU0 = (
    r"^(?=.*(?:all|every|each|both|multiple|several) (?:\w+ )?(?:process|rank|worker)s?)"
    r"(?=.*(?:same gpu|one gpu|single gpu|gpu ?0|cuda:0|device 0))"
)
_SAME_DATA = (
    r"^(?=.*(?:same|identical|duplicated?|whole|entire|full) (?:\w+ )?(?:data(?:set)?|batch(?:es)?|samples?))"
    r"(?=.*(?:every|each|all|both) (?:\w+ )?(?:ranks?|gpus?|process(?:es)?|workers?|devices?))"
)
_PRINTED = (
    r"(?:prints?|printed|logs?|logged|messages?|lines?) (?:\w+ ){0,3}?"
    r"(?:twice|\d+ times|(?:once )?(?:per|for each|for every) (?:gpu|rank|process))(?! (?:per|each|every) )"
    r"|(?:multiple|several|\d+) (?:tqdm |progress )+bars"
)
_KEYS = r"(?:\s*[\"'][^\"']*[\"'],)*\s*[\"']module\."  # a quoted key list with a 'module.' key anywhere in it

# (pattern, rule codes most likely behind it, what the message means). Matched without regard to
# case: lowered, against lowercased text (escapes such as \S keep their meaning). Ordered: the first
# patterns are the most specific; a later pattern whose rules were all named already is not
# reported again.
PATTERNS: list[tuple[str, tuple[str, ...], str]] = [
    (
        r"sampler option is mutually exclusive with shuffle|batch_sampler option is mutually exclusive",
        ("DDP203", "DDP202"),
        "the DataLoader got both shuffle= and a sampler",
    ),
    (
        r"Error\(s\) in loading state_dict for DistributedDataParallel|Missing key\(s\) in state_dict:" + _KEYS,
        ("DDP403", "DDP402"),
        "a plain checkpoint loaded into the DDP wrapper: its keys lack the wrapper's 'module.' prefix",
    ),
    (
        r"Unexpected key\(s\) in state_dict:" + _KEYS,
        ("DDP402", "DDP403"),
        "a checkpoint saved from the DDP wrapper: its keys carry the 'module.' prefix the model lacks",
    ),
    (r"Error\(s\) in loading state_dict", ("DDP403", "DDP402"), "state_dict keys do not match the model"),
    (
        r"Default process group has not been initialized"
        r"|environment variable (RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) expected, but not set"
        r"|KeyError: '(LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)'",
        ("DDP001",),
        "distributed code ran without a process group (or outside torchrun)",
    ),
    (
        r"Expected to have finished reduction in the prior iteration",
        ("DDP310", "DDP102"),
        "some parameters got no gradient, or ranks ran different steps",
    ),
    (r"SyncBatchNorm expected input tensor to be on GPU", ("DDP306",), "SyncBatchNorm ran on CPU tensors"),
    (r"Duplicate GPU detected", ("DDP006", "DDP007", "DDP005"), "two ranks share one GPU"),
    (
        r"ncclInvalidUsage|invalid usage(?: \(run with NCCL_DEBUG=WARN for details\))?, NCCL version",
        ("DDP006", "DDP007", "DDP005"),
        "NCCL refused the setup; most often two ranks share one GPU",
    ),
    (r"invalid device ordinal", ("DDP005", "DDP007"), "a device index that does not exist on this node"),
    (
        r"Expected all tensors to be on the same device, but found at least two devices, cuda:\d+ and cuda:\d+",
        ("DDP007", "DDP404", "DDP005", "DDP006"),
        "tensors on another rank's GPU: a hard-coded device, or a checkpoint loaded without map_location",
    ),
    (r"ProcessGroupNCCL is only supported with GPUs|no GPUs found", ("DDP002",), "NCCL on a machine without GPUs"),
    (
        r"No backend type associated with device type cpu|Tensors must be CUDA and dense"
        r"|Distributed package doesn't have NCCL built in",
        ("DDP002",),
        "the NCCL backend got CPU tensors, or this PyTorch has no NCCL",
    ),
    (r"device_ids and output_device arguments only work with", ("DDP303",), "device_ids given for a CPU module"),
    (
        r"'DistributedDataParallel' object has no attribute",
        ("DDP308",),
        "a custom attribute reached through the wrapper",
    ),
    (
        r"Detected mismatch between collectives|Collectives differ in the following aspects|unexpected collective"
        r"|collectives? (?:do not|don't|did not|didn't) match",
        ("DDP101", "DDP102"),
        "ranks issued different collectives",
    ),
    (
        r"Received data size doesn't match expected size|collective mismatch",
        ("DDP103", "DDP101"),
        "a collective on some ranks only (often a forward of the wrapper on rank 0)",
    ),
    (
        r"takes \d+ positional arguments? but \d+ (were|was) given",
        ("DDP004",),
        "an mp.spawn target without the process index",
    ),
    (
        r"DistStoreError|wait timeout after \d+ms|Timed out after \d+ seconds waiting for clients"
        r"|The client socket has timed out after|failed to connect/validate to host|Socket Timeout",
        ("DDP003", "DDP004"),
        "the rendezvous waits for ranks that never come (rank/world size by hand)",
    ),
    (
        r"server socket has failed to listen|EADDRINUSE|address already in use",
        ("DDP003",),
        "the rendezvous port is taken: another job uses it, or a hand-written init_method fixes it",
    ),
    (
        r"PytorchStreamReader failed reading|failed finding central directory",
        ("DDP410", "DDP401"),
        "a checkpoint read while another rank was writing it",
    ),
    (
        r"Watchdog caught collective operation timeout|WorkNCCL\(.*\) ran for \d+ milliseconds before timing out"
        r"|Some NCCL operations have failed or timed out|NCCL communicator was aborted|Heartbeat monitor timed out"
        r"|watchdog got stuck|Timed out waiting \d+ms for (recv|send)|Connection closed by peer"
        r"|Connection reset by peer|failed to pass monitoredBarrier|timed out in monitoredBarrier"
        r"|barrier failed -- missing ranks|barrier timeout after \d+ms|ncclRemoteError"
        r"|remote process exiting prematurely",
        ("DDP101", "DDP102", "DDP105", "DDP104", "DDP410"),
        "a rank waits in a collective the others never reach",
    ),
    (r"destroy_process_group\(\) was not called", ("DDP001",), "the process group is never torn down"),
    (r"FileExistsError: \[Errno 17\] File exists", ("DDP420",), "several ranks created the same folder at once"),
    (
        r"File is not a zip file|Compressed file ended before the end-of-stream"
        r"|(MD5|checksum|Checksum).*(mismatch|failed|does not match)",
        ("DDP208", "DDP410"),
        "a download or archive read while another rank was still writing it",
    ),
    (
        r"find_unused_parameters=True was specified in DDP constructor, but did not find any unused",
        ("DDP310",),
        "find_unused_parameters costs a graph traversal per step for nothing",
    ),
    # Forum wording, after the PyTorch messages that say the same more precisely.
    (
        rf"^(?=.*{_HANG})(?=.*{_INIT})",
        ("DDP003", "DDP004"),
        "the rendezvous waits for ranks that never come (rank/world size by hand)",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_END})(?!.*{_INIT})",
        ("DDP104", "DDP102"),
        "ranks ran different numbers of steps: the ones that finish first leave the others waiting",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_EVAL})(?!.*{_INIT})(?!.*{_END})",
        ("DDP103", "DDP101"),
        "evaluation on some ranks only: it runs collectives (or DDP's forward) the others never join",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_COLLECTIVE})(?!.*{_INIT})(?!.*{_END})(?!.*{_EVAL})",
        ("DDP101", "DDP102", "DDP105", "DDP104", "DDP410"),
        "a rank waits in a collective the others never reach",
    ),
    (
        _GPU0,
        ("DDP006", "DDP007", "DDP005"),
        "two ranks share one GPU",
    ),
    (
        _SAME_DATA,
        ("DDP201", "DDP202", "DDP205"),
        "every rank iterates the whole dataset (no DistributedSampler, or one never passed to the DataLoader)",
    ),
    (
        r"same (?:order|shuffle|batches|samples) (?:in |on |for )?(?:every|each) epoch"
        r"|every epoch (?:has|sees|gets|uses) the same (?:order|shuffle|batches|samples)",
        ("DDP204",),
        "the DistributedSampler never gets set_epoch(): every epoch uses the same order",
    ),
    (
        _PRINTED,
        ("DDP406", "DDP405", "DDP408"),
        "every rank prints, logs or draws a progress bar",
    ),
    (
        r"module\.[\"'`]? prefix|prefix [\"'`]?module\.",
        ("DDP402", "DDP403"),
        "a checkpoint and a model disagree on the 'module.' prefix of the DDP wrapper",
    ),
]

# Cheap supersets of the slow forum patterns: only the lines where the gate matches are tried
# against the pattern itself, which keeps a long log fast.
GATES: dict[str, str] = {
    pattern: gate
    for pattern, gate in (
        *((p, _HANG_GATE) for p, _, _ in PATTERNS if _HANG in p),
        (_GPU0, r"gpu|cuda:0|device 0"),
        (_SAME_DATA, r"same|identical|duplicat|whole|entire|full"),
        (_PRINTED, r"twice|times|per gpu|per rank|per process|for each|for every|bars"),
    )
}


__all__ = ["GATES", "PATTERNS"]
