"""ggml: the block types and quantizers, the ggml parameter records, and rwkv.cpp model files."""
