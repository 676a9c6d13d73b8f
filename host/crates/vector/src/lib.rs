//! Vector search over chunk embeddings: exact cosine for small collections, HNSW above a threshold.
