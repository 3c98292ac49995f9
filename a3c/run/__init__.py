"""A run: the trainer, its records (metrics, console, TensorBoard, checkpoints' timing, phases, tracking) and checks."""
