"""fastText: binary models (``.bin``) and quantized ones (``.ftz``), their lookups and prediction."""
