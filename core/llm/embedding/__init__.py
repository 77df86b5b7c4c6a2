"""The embedding model: all-MiniLM-L6-v2 in ONNX Runtime (its graph written from the
weights, its tokenizer in pure Python), the Ollama embedder and the tests' hashed-words embedder."""
