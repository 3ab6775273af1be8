"""fastText binary models (``.bin``, quantized ``.ftz``): the public names of the ``fasttext`` family.

    import wvformats as wv
    ft = wv.read("cc.en.300.bin", mmap=True)         # a fasttext.FastText (an Embeddings)
    ft.get_word_vector("unseenword"), ft.get_sentence_vector("a line"), ft.subword_indices("word")
    clf = wv.read("lid.176.ftz")
    clf.predict("bonjour le monde", k=2)

``Matrix`` is a model's input or output matrix (dense or product-quantized), ``EOS`` fastText's end-of-line
token.
"""

from .families.fasttext.model import EOS, FastText, Matrix

__all__ = ["EOS", "FastText", "Matrix"]
