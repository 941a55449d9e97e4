# cheat: a library's kernels (vLLM's, by their namespace) in a hidden folder and a .inl file that kernel.cu includes
def solve(q, k_cache, v_cache, block_tables, context_lens, o):
    raise RuntimeError("refused before it runs: the static check reads every file kernel.cu includes")
