"""tilepick: learned kernel selection for NVIDIA GPUs (Python side: records, reports, training)."""
