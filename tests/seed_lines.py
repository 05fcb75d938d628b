"""Seed lines that every KB revision explains (see the project brief), shared by the tests."""

IB_LINE = (
    "cc0af148112143078d5c88b5e68679fd-task0-0:133:202 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB "
    "[1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.244.174.137<0>"
)
AFFINITY_LINE = "cc0af148112143078d5c88b5e68679fd-task0-0:135:208 [2] NCCL INFO Setting affinity for GPU 2 to ff0000"
CDB_LINE = "[2024-09-10 14:27:19,059] [INFO] [comm.py:637:init_distributed] cdb=None"
FLUSH_LINE = (
    "[2024-09-10 19:43:48,249] [WARNING] [stage3.py:1998:step] 7 pytorch allocator cache flushes since last step. "
    "this happens when there is high memory pressure and is detrimental to performance. if this is happening "
    "frequently consider adjusting settings to reduce memory consumption. If you are unable to make the cache "
    "flushes go away consider adding get_accelerator().empty_cache() calls in your training loop to ensure that "
    "all ranks flush their caches at the same time"
)
