"""memreplay: record GPU memory-allocation traces (.mrt) and replay them against allocator policies.

The Python side holds only the live recorders (memreplay.torch); everything else is the
`memreplay` command-line tool.
"""
