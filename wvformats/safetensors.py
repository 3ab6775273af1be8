"""safetensors (Hugging Face) tensor files: the public names of the ``safetensors`` family.

    import wvformats as wv
    from wvformats import safetensors
    st = wv.read("model.safetensors")                # a safetensors.SafeTensors: name -> array (views of the map)
    st["w"], st.dtypes["w"], st.metadata, st.to_numpy("w")   # BF16 / float8 / float4 decoded to float32
    wv.write(safetensors.SafeTensors.from_arrays({"w": array}, {"format": "np"}), "out.safetensors")
    sharded = safetensors.ShardedSafeTensors("model.safetensors.index.json")   # lazy: a shard opened when used
    safetensors.write_sharded(st, "out/", max_shard_bytes=2 * 10**9)          # huggingface_hub's split and names

``DTYPES`` gives each safetensors dtype code with the numpy dtype its tensors read as (the raw bits of the
types numpy lacks); ``to_float32`` decodes a raw array of such a code.
"""

from .families.safetensors.model import SafeTensors, to_float32
from .families.safetensors.shards import ShardedSafeTensors, write_sharded
from .schemas.safetensors import DTYPES

__all__ = ["DTYPES", "SafeTensors", "ShardedSafeTensors", "to_float32", "write_sharded"]
