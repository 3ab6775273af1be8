"""The custom constructs that the schema modules declare fields with, one module per format: what construct's
own classes cannot declare, or not fast enough (record tables that run as one loop over the bytes, GGUF's typed
values and string arrays, the text tables of word vectors). Each stays checked (lengths against the bytes that
remain, located errors) and builds byte-exact. Families import them from here; they import only the framework.
"""
