"""Word-vector text and binary formats: word2vec binary and text, GloVe, fastText ``.vec``, Leader."""
