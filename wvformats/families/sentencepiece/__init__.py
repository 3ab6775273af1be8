"""SentencePiece ``tokenizer.model``: the ModelProto model on the protobuf wire layer, exports, edits."""
