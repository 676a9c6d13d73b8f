//! Sentence embeddings with candle: BERT-family encoders, tokenizers, model resolution.
