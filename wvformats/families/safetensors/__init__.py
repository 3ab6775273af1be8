"""The safetensors family: Hugging Face's tensor files (``.safetensors``)."""
